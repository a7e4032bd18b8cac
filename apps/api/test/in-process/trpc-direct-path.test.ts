import superjson from 'superjson';
import { describe, expect, it } from 'vitest';
import { apiOnStore } from '../support/api-on-store.ts';
import { postPlant, send, TOKEN } from '../support/http.ts';
import type { RunningApi } from '../support/in-process.ts';
import { sqliteTestStore } from '../support/stores.ts';

/**
 * trpc/http-adapter.ts answers plain JSON mutations itself (its direct path) and hands everything else to
 * tRPC's own node-http handler. The direct path writes tRPC's wire format with tRPC's public
 * helpers, and must stay indistinguishable from the handler: each request below is sent both ways
 * (`trpc-accept: application/json` makes the adapter use tRPC's handler) and must get the same
 * status and body. When a tRPC upgrade changes its wire format, this fails first.
 */
describe('the tRPC direct path', () => {
  let api: RunningApi;
  const READER = 'reader-token-0123456789';
  apiOnStore(sqliteTestStore, (running) => ({ api } = running), {
    tokens: [{ name: 'reader', secret: READER, scopes: ['read'] }],
  });

  let next = 9_000_000;
  const plant = (fields: Record<string, unknown> = {}) =>
    superjson.serialize({ id: BigInt(++next), name: 'Fern', ...fields });

  /** One request, sent to the direct path and to tRPC's handler. */
  async function bothWays(
    paths: string[],
    body: (fresh: typeof plant) => unknown,
    { token = TOKEN, raw }: { token?: string; raw?: string } = {},
  ) {
    const answers = [];
    for (const handler of [false, true]) {
      const batch = paths.length > 1 ? '?batch=1' : '';
      const answer = await send(`${api.url}/trpc/${paths.join(',')}${batch}`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          ...(handler && { 'trpc-accept': 'application/json' }),
        },
        body: raw ?? JSON.stringify(body(plant)),
      });
      answers.push({ status: answer.status, body: answer.json });
    }
    const [direct, viaHandler] = answers;
    expect(
      direct,
      "the direct path no longer answers as tRPC's own handler does: it goes around the handler by the rule of docs/architecture.md (Going around a library); make it follow, or remove it",
    ).toEqual(viaHandler);
    return direct!;
  }

  it('answers a call, a conflict, a bad input and a batch of mixed outcomes as tRPC does', async () => {
    expect(await bothWays(['plants.create'], (p) => p())).toEqual({
      status: 200,
      body: { result: { data: { json: { name: 'Fern' } } } },
    });
    expect((await postPlant(api.url, '{"id":1,"name":"Fern"}')).status).toBe(200);
    const conflict = await bothWays(['plants.create'], () => superjson.serialize({ id: 1n, name: 'Fern' }));
    expect(conflict.status).toBe(409);
    expect(await bothWays(['plants.create'], (p) => p({ name: 42 }))).toEqual({
      status: 400,
      body: {
        error: {
          json: {
            message: 'Invalid request body: name must be a string.',
            code: -32600,
            data: { code: 'BAD_REQUEST', httpStatus: 400, path: 'plants.create' },
          },
        },
      },
    });
    const mixed = await bothWays(['plants.create', 'plants.create', 'plants.delete'], (p) => ({
      0: p(),
      1: p({ tag: 7 }),
      2: superjson.serialize({ id: -1n }),
    }));
    expect(mixed.status).toBe(207);
  });

  it('refuses a body over 64 KiB from a token that may call the procedure (413), and reads none from one that may not (403)', async () => {
    const body = `{"json":{"id":"1","name":"${'x'.repeat(70_000)}"}}`;
    const post = (token: string) =>
      send(`${api.url}/trpc/plants.create`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body,
      });
    const tooLarge = await post(TOKEN);
    expect([tooLarge.status, tooLarge.json]).toEqual([
      413,
      {
        error: {
          json: {
            message: 'The request body is larger than 65536 bytes.',
            code: -32013,
            data: { code: 'PAYLOAD_TOO_LARGE', httpStatus: 413, path: 'plants.create' },
          },
        },
      },
    ]);
    expect((await post(READER)).status).toBe(403);
  });

  it('answers a missing scope, an unknown token and a superjson it cannot revive as tRPC does', async () => {
    expect((await bothWays(['plants.create'], (p) => p(), { token: READER })).status).toBe(403);
    expect(
      (await bothWays(['plants.delete'], () => superjson.serialize({ id: 1n }), { token: 'x' })).status,
    ).toBe(401);
    expect(
      (
        await bothWays(['plants.create'], () => ({
          json: { id: '1', name: 'F' },
          meta: { values: { id: ['no'] } },
        }))
      ).status,
    ).toBe(400);
  });
});
