import superjson from 'superjson';
import { describe, expect, it } from 'vitest';
import { apiOnStore } from '../support/api-on-store.ts';
import { JSON_HEADERS, postPlant, send, TOKEN } from '../support/http.ts';
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
  const WRITER = 'writer-token-0123456789';
  apiOnStore(sqliteTestStore, (running) => ({ api } = running), {
    tokens: [
      { name: 'reader', secret: READER, scopes: ['read'] },
      { name: 'writer', secret: WRITER, scopes: ['write'] },
    ],
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

  /**
   * A subscription's stream read until `done` says it holds enough (or it ends), then closed: its
   * status, the headers tRPC sets, and the text.
   */
  async function subscription(
    query: string,
    headers: Record<string, string>,
    done: (text: string) => boolean,
  ) {
    const controller = new AbortController();
    const answer = await fetch(`${api.url}/trpc/plants.events?${query}`, {
      headers,
      signal: controller.signal,
    });
    const reader = answer.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    const opened = new Promise<void>((resolve) => {
      void (async () => {
        for (;;) {
          const { value, done: ended } = await reader.read().catch(() => ({ value: undefined, done: true }));
          if (ended) break;
          text += decoder.decode(value, { stream: true });
          if (text.includes('event: connected')) resolve();
          if (done(text)) break;
        }
        resolve();
      })();
    });
    await opened;
    const header = (name: string) => answer.headers.get(name);
    return {
      read: async () => {
        await expect
          .poll(() => done(text) || text.includes('serialized-error'), { timeout: 5_000 })
          .toBe(true);
        controller.abort();
        return {
          status: answer.status,
          headers: ['content-type', 'cache-control', 'x-accel-buffering', 'vary'].map(header),
          text,
        };
      },
    };
  }

  /** One subscription, opened directly and through tRPC's handler; `meanwhile` runs once both are open. */
  async function subscribedBothWays(
    query: string,
    { token = TOKEN, headers = {}, events = 0, meanwhile = async () => {} } = {} as {
      token?: string;
      headers?: Record<string, string>;
      events?: number;
      meanwhile?: () => Promise<unknown>;
    },
  ) {
    const done = (text: string) => text.split('\nid: ').length > events;
    const streams = await Promise.all(
      ([{}, { 'trpc-accept': 'application/json' }] as Record<string, string>[]).map(
        (handler: Record<string, string>) =>
          subscription(query, { authorization: `Bearer ${token}`, ...headers, ...handler }, done),
      ),
    );
    await meanwhile();
    const [direct, viaHandler] = await Promise.all(streams.map((stream) => stream.read()));
    expect(
      direct,
      "subscriptions no longer answer as tRPC's own handler does: trpc/subscription.ts goes around it by the rule of docs/architecture.md (Going around a library); make it follow, or remove it",
    ).toEqual(viaHandler);
    return direct!;
  }

  const input = (value: object) => `input=${encodeURIComponent(JSON.stringify(superjson.serialize(value)))}`;

  it('streams events as tRPC does, and resumes from lastEventId or Last-Event-ID as it does', async () => {
    const ids = [++next, ++next].map(BigInt);
    const live = await subscribedBothWays(input({}), {
      events: 3,
      meanwhile: async () => {
        for (const id of ids)
          expect((await postPlant(api.url, `{"id":${id},"name":"Fern"}`)).status).toBe(200);
        expect(
          (await send(`${api.url}/plants/${ids[0]}`, { method: 'DELETE', headers: JSON_HEADERS })).status,
        ).toBe(204);
      },
    });
    expect(live.status).toBe(200);
    expect(live.headers).toEqual([
      'text/event-stream',
      'no-cache, no-transform',
      'no',
      'trpc-accept, accept',
    ]);
    const frames = live.text.split('\n\n\n').slice(0, 4);
    expect(frames[0]).toBe('event: connected\ndata: {}');
    const [first, , deleted] = frames.slice(1).map((frame) => {
      const [, data, id] = /^data: (.*)\nid: (\d+)$/.exec(frame)!;
      return {
        id: BigInt(id!),
        event: superjson.deserialize(JSON.parse(data!)) as { plant: { id: bigint } },
      };
    });
    expect(first!.event.plant.id).toBe(ids[0]);
    expect(deleted!.event).toMatchObject({ type: 'plant.deleted', plant: { id: ids[0] } });
    // Resumed after the first: the other two, whichever way the id comes.
    const after = String(first!.id);
    const resumed = [
      await subscribedBothWays(`${input({})}&lastEventId=${after}`, { events: 2 }),
      await subscribedBothWays(input({}), { headers: { 'last-event-id': after }, events: 2 }),
      await subscribedBothWays(input({ lastEventId: after }), { events: 2 }),
    ];
    for (const { text } of resumed)
      expect(text.split('\n\n\n').slice(0, 3).join('\n\n\n')).toBe(
        frames.slice(0, 1).concat(frames.slice(2)).join('\n\n\n'),
      );
  });

  it('refuses a bad input, an unreadable one, a resume past the newest event and a missing scope as tRPC does', async () => {
    const refusal = async (query: string, token?: string) => {
      const { status, text } = await subscribedBothWays(query, { token });
      const [, data] = /^event: connected\ndata: \{\}\n\n\nevent: serialized-error\ndata: (.*)\n\n\n$/.exec(
        text,
      )!;
      return [status, superjson.deserialize(JSON.parse(data!))];
    };
    const shape = (status: number, code: number, key: string, message: string) => [
      200,
      { message, code, data: { code: key, httpStatus: status, path: 'plants.events' } },
    ];
    expect(await refusal(input({ types: 'bad' }))).toEqual(
      shape(
        400,
        -32600,
        'BAD_REQUEST',
        'Invalid request parameters: types Invalid input: expected array, received string.',
      ),
    );
    expect(await refusal('input=%7Bnot')).toEqual(
      shape(
        400,
        -32600,
        'BAD_REQUEST',
        'Invalid request parameters: the input is not valid tRPC JSON (superjson).',
      ),
    );
    expect(await refusal(input({ lastEventId: 'x' }))).toMatchObject([200, { data: { httpStatus: 400 } }]);
    expect(await refusal(input({ after: 10n ** 15n }))).toMatchObject([200, { data: { httpStatus: 404 } }]);
    expect(await refusal(input({}), WRITER)).toMatchObject([200, { data: { httpStatus: 403 } }]);
  });
});
