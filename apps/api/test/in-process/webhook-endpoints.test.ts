import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createTRPCClient, httpBatchLink, TRPCClientError } from '@trpc/client';
import superjson from 'superjson';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.ts';
import type { AppRouter } from '../../src/trpc/router.ts';
import { openStore } from '../../src/store/open-store.ts';
import { apiOnStore } from '../support/api-on-store.ts';
import type { RunningApi } from '../support/in-process.ts';
import { errorBody, send, TOKEN } from '../support/http.ts';
import { type TestStoreInstance, testStores } from '../support/stores.ts';

const ALICE = 'alice-token-0123456789';
const BOB = 'bob-token-0123456789';
const PLAIN = 'plain-token-0123456789';
const HOOKS_ONLY = 'hooks-only-token-0123456789';
const SECRETS_KEY = randomBytes(32).toString('base64');
const ENDPOINT_ID = /^we_[0-9a-f]{24}$/;
const SECRET = /^whsec_[A-Za-z0-9+/]{32}$/;
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

const as = (token: string) => ({ authorization: `Bearer ${token}`, 'content-type': 'application/json' });

function trpcAs(url: string, token: string) {
  return createTRPCClient<AppRouter>({
    links: [
      httpBatchLink({
        url: `${url}/trpc`,
        transformer: superjson,
        headers: { authorization: `Bearer ${token}` },
      }),
    ],
  });
}

/** The status and message of a tRPC call that must fail. */
async function trpcError(call: Promise<unknown>): Promise<{ status: unknown; message: string }> {
  try {
    await call;
  } catch (error) {
    if (error instanceof TRPCClientError) return { status: error.data?.httpStatus, message: error.message };
    throw error;
  }
  throw new Error('the call succeeded');
}

describe.each(testStores())('webhook endpoints on $name', (testStore) => {
  let api: RunningApi;
  let store: TestStoreInstance;
  apiOnStore(
    testStore,
    (running) => {
      ({ api, store } = running);
    },
    {
      env: {
        WEBHOOK_ALLOW_PRIVATE_URLS: '1',
        WEBHOOK_ENDPOINTS_PER_TOKEN: '3',
        ...(testStore.name === 'postgres' && { WEBHOOK_SECRETS_KEY: SECRETS_KEY }),
      },
      tokens: [
        { name: 'alice', secret: ALICE, scopes: ['read', 'webhooks'] },
        { name: 'bob', secret: BOB, scopes: ['read', 'webhooks'] },
        { name: 'plain', secret: PLAIN, scopes: ['read', 'write'] },
        { name: 'hooks-only', secret: HOOKS_ONLY, scopes: ['webhooks'] },
      ],
    },
  );

  const register = (token: string, body: unknown) =>
    send(`${api.url}/webhook-endpoints`, { method: 'POST', headers: as(token), body: JSON.stringify(body) });

  it('registers an endpoint (201, the secret this once), lists and reads it without the secret, and deletes it (204)', async () => {
    const created = await register(ALICE, { url: 'http://127.0.0.1:9/hook', description: 'staging' });
    expect(created.status).toBe(201);
    const endpoint = created.json as { id: string; secret: string; createdAt: string };
    expect(Object.keys(endpoint)).toStrictEqual([
      'id',
      'url',
      'description',
      'createdAt',
      'events',
      'disabled',
      'secret',
    ]);
    expect(endpoint).toMatchObject({
      url: 'http://127.0.0.1:9/hook',
      description: 'staging',
      events: ['plant.created'],
      disabled: null,
    });
    expect(endpoint.id).toMatch(ENDPOINT_ID);
    expect(endpoint.secret).toMatch(SECRET);
    expect(endpoint.createdAt).toMatch(ISO);
    const { secret, ...shown } = endpoint;

    const list = await send(`${api.url}/webhook-endpoints`, { headers: as(ALICE) });
    expect(list.status).toBe(200);
    expect(list.json).toStrictEqual([shown]);
    const one = await send(`${api.url}/webhook-endpoints/${endpoint.id}`, { headers: as(ALICE) });
    expect(one.json).toStrictEqual(shown);
    expect(list.text + one.text).not.toContain(secret);
    // A second registration without a description.
    const second = await register(ALICE, { url: 'http://127.0.0.1:9/other' });
    expect((second.json as { description: unknown }).description).toBeNull();

    // At rest the store holds only ciphertext: neither the secret nor its key bytes appear in the row.
    const rows = await store.rows(`SELECT * FROM webhook_endpoints WHERE id = '${endpoint.id}'`);
    expect(rows).toHaveLength(1);
    const row = JSON.stringify(rows[0]);
    expect(row).not.toContain(secret);
    expect(row).not.toContain(secret.slice('whsec_'.length));
    expect(row).not.toContain(Buffer.from(secret.slice('whsec_'.length), 'base64').toString('hex'));
    expect(String(rows[0]!.secret)).toMatch(/^v1\.[A-Za-z0-9_-]+$/);

    const deleted = await send(`${api.url}/webhook-endpoints/${endpoint.id}`, {
      method: 'DELETE',
      headers: as(ALICE),
    });
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe('');
    const again = await send(`${api.url}/webhook-endpoints/${endpoint.id}`, { headers: as(ALICE) });
    expect(again.status).toBe(404);
    expect(again.text).toBe(errorBody(404, `There is no webhook endpoint with id ${endpoint.id}.`));
    await send(`${api.url}/webhook-endpoints/${(second.json as { id: string }).id}`, {
      method: 'DELETE',
      headers: as(ALICE),
    });
    expect(await store.rows('SELECT id FROM webhook_endpoints')).toStrictEqual([]);
  });

  it('answers another token’s endpoint as unknown (404, the same message) everywhere, and lists none of it', async () => {
    const { id } = (await register(ALICE, { url: 'http://127.0.0.1:9/alice' })).json as { id: string };
    const ping = await send(`${api.url}/webhook-endpoints/${id}/ping`, {
      method: 'POST',
      headers: as(ALICE),
    });
    expect(ping.status).toBe(202);
    const deliveryId = (ping.json as { id: string }).id;
    const unknown = `we_${'0'.repeat(24)}`;
    for (const target of [id, unknown]) {
      const expected = errorBody(404, `There is no webhook endpoint with id ${target}.`);
      const calls: [string, string][] = [
        ['GET', ''],
        ['DELETE', ''],
        ['POST', '/rotate-secret'],
        ['GET', '/deliveries'],
        ['POST', `/deliveries/${deliveryId}/redeliver`],
        ['POST', '/ping'],
      ];
      for (const [method, suffix] of calls) {
        const answer = await send(`${api.url}/webhook-endpoints/${target}${suffix}`, {
          method,
          headers: as(BOB),
        });
        expect([method, suffix, answer.status, answer.text]).toStrictEqual([method, suffix, 404, expected]);
      }
    }
    expect((await send(`${api.url}/webhook-endpoints`, { headers: as(BOB) })).json).toStrictEqual([]);
    // And over tRPC.
    const bob = trpcAs(api.url, BOB);
    expect(await bob.webhookEndpoints.list.query()).toStrictEqual([]);
    expect(await trpcError(bob.webhookEndpoints.get.query({ id }))).toStrictEqual({
      status: 404,
      message: `There is no webhook endpoint with id ${id}.`,
    });
    expect(await trpcError(bob.webhookEndpoints.rotateSecret.mutate({ id }))).toMatchObject({ status: 404 });
    // Alice's endpoint is untouched.
    const [row] = await store.rows(`SELECT secret FROM webhook_endpoints WHERE id = '${id}'`);
    expect(row).toBeDefined();
    expect((await send(`${api.url}/webhook-endpoints/${id}`, { headers: as(ALICE) })).status).toBe(200);
    await send(`${api.url}/webhook-endpoints/${id}`, { method: 'DELETE', headers: as(ALICE) });
  });

  it('needs the webhooks scope: a read and write token gets 403 on every operation', async () => {
    const id = `we_${'1'.repeat(24)}`;
    const calls: [string, string, string?][] = [
      ['POST', '', '{"url":"http://127.0.0.1:9/x"}'],
      ['GET', ''],
      ['GET', `/${id}`],
      ['DELETE', `/${id}`],
      ['POST', `/${id}/rotate-secret`],
      ['GET', `/${id}/deliveries`],
      ['POST', `/${id}/deliveries/msg_${'2'.repeat(32)}/redeliver`],
      ['POST', `/${id}/ping`],
    ];
    for (const [method, suffix, body] of calls) {
      const answer = await send(`${api.url}/webhook-endpoints${suffix}`, {
        method,
        headers: as(PLAIN),
        body,
      });
      expect([method, suffix, answer.status, answer.text]).toStrictEqual([
        method,
        suffix,
        403,
        errorBody(403, 'This token lacks the webhooks scope this operation needs.'),
      ]);
    }
    expect(await store.rows('SELECT id FROM webhook_endpoints')).toStrictEqual([]);
    // API_TOKENS have every scope.
    const list = await send(`${api.url}/webhook-endpoints`, { headers: as(TOKEN) });
    expect([list.status, list.json]).toStrictEqual([200, []]);
  });

  it('needs the read scope too to register, since an endpoint receives every plant: 403 naming it, over REST and tRPC', async () => {
    const answer = await register(HOOKS_ONLY, { url: 'http://127.0.0.1:9/x' });
    expect([answer.status, answer.text]).toStrictEqual([
      403,
      errorBody(403, 'This token lacks the read scope this operation needs.'),
    ]);
    expect(
      await trpcError(
        trpcAs(api.url, HOOKS_ONLY).webhookEndpoints.create.mutate({ url: 'http://127.0.0.1:9/x' }),
      ),
    ).toStrictEqual({ status: 403, message: 'This token lacks the read scope this operation needs.' });
    expect(await store.rows("SELECT id FROM webhook_endpoints WHERE owner = 'hooks-only'")).toStrictEqual([]);
    // What it may still do: list (and so delete) what it registered before.
    const list = await send(`${api.url}/webhook-endpoints`, { headers: as(HOOKS_ONLY) });
    expect([list.status, list.json]).toStrictEqual([200, []]);
  });

  it('shows a disabled endpoint with since when and why; ping and redeliver answer 409, delete still works', async () => {
    const created = (await register(ALICE, { url: 'http://127.0.0.1:9/off' })).json as { id: string };
    const ping = await send(`${api.url}/webhook-endpoints/${created.id}/ping`, {
      method: 'POST',
      headers: as(ALICE),
    });
    const deliveryId = (ping.json as { id: string }).id;
    const plants = await openStore(loadConfig({ ...store.env, API_TOKENS: TOKEN }).store);
    try {
      await plants.webhookEndpoints.disable(created.id, 'operator');
    } finally {
      await plants.close();
    }
    const read = await send(`${api.url}/webhook-endpoints/${created.id}`, { headers: as(ALICE) });
    const { disabled } = read.json as { disabled: { at: string; reason: string } };
    expect(disabled).toStrictEqual({ at: expect.stringMatching(ISO), reason: 'operator' });
    expect(Math.abs(Date.parse(disabled.at) - Date.now())).toBeLessThan(60_000);
    const refused = errorBody(
      409,
      `Webhook endpoint ${created.id} is disabled (operator): it gets no deliveries.`,
    );
    for (const suffix of ['/ping', `/deliveries/${deliveryId}/redeliver`]) {
      const answer = await send(`${api.url}/webhook-endpoints/${created.id}${suffix}`, {
        method: 'POST',
        headers: as(ALICE),
      });
      expect([suffix, answer.status, answer.text]).toStrictEqual([suffix, 409, refused]);
    }
    const deliveries = await send(`${api.url}/webhook-endpoints/${created.id}/deliveries`, {
      headers: as(ALICE),
    });
    expect(deliveries.json).toMatchObject([
      { id: deliveryId, status: 'failed', lastError: 'endpoint disabled (operator)', nextAttemptAt: null },
    ]);
    expect(
      (await send(`${api.url}/webhook-endpoints/${created.id}`, { method: 'DELETE', headers: as(ALICE) }))
        .status,
    ).toBe(204);
  });

  it('refuses bad bodies and ids with 400, and refused URLs with the policy’s message', async () => {
    const cases: [unknown, string][] = [
      [{}, 'Invalid request body: url is required.'],
      [{ url: 'ftp://127.0.0.1/x' }, 'url must be an https:// or http:// URL'],
      [{ url: 'not a url' }, 'url must be an absolute URL'],
      [{ url: 'http://127.0.0.1:9/x', extra: 1 }, 'The request body has an unknown field: extra.'],
    ];
    for (const [body, message] of cases) {
      const answer = await register(ALICE, body);
      expect(answer.status).toBe(400);
      expect((answer.json as { message: string }).message).toContain(message);
    }
    const badId = await send(`${api.url}/webhook-endpoints/nope`, { headers: as(ALICE) });
    expect(badId.status).toBe(400);
    expect((badId.json as { message: string }).message).toContain(
      'must be a webhook endpoint id (we_ and 24 hex digits)',
    );
    expect(await store.rows('SELECT id FROM webhook_endpoints')).toStrictEqual([]);
  });

  it('limits each token to WEBHOOK_ENDPOINTS_PER_TOKEN endpoints (409), counting only its own', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const created = await register(ALICE, { url: `http://127.0.0.1:9/${i}` });
      expect(created.status).toBe(201);
      ids.push((created.json as { id: string }).id);
    }
    const refused = await register(ALICE, { url: 'http://127.0.0.1:9/3' });
    expect(refused.status).toBe(409);
    expect(refused.text).toBe(
      errorBody(409, 'This token already has 3 webhook endpoints, the most allowed; delete one first.'),
    );
    // Concurrent registrations never pass the limit either.
    const bobs = await Promise.all(
      Array.from({ length: 6 }, (_, i) => register(BOB, { url: `http://127.0.0.1:9/bob${i}` })),
    );
    expect(bobs.map((answer) => answer.status).sort()).toStrictEqual([201, 201, 201, 409, 409, 409]);
    const listed = (await send(`${api.url}/webhook-endpoints`, { headers: as(ALICE) })).json as {
      id: string;
    }[];
    expect(listed.map((endpoint) => endpoint.id)).toStrictEqual(ids);
    for (const token of [ALICE, BOB]) {
      const all = (await send(`${api.url}/webhook-endpoints`, { headers: as(token) })).json as {
        id: string;
      }[];
      for (const { id } of all) {
        await send(`${api.url}/webhook-endpoints/${id}`, { method: 'DELETE', headers: as(token) });
      }
    }
    expect(await store.rows('SELECT id FROM webhook_endpoints')).toStrictEqual([]);
  });

  it('rotates the secret: a new one, shown once, and when the previous one stops signing', async () => {
    const created = (await register(ALICE, { url: 'http://127.0.0.1:9/r' })).json as {
      id: string;
      secret: string;
    };
    const before = await store.rows(`SELECT secret FROM webhook_endpoints WHERE id = '${created.id}'`);
    const started = Date.now();
    const rotated = await send(`${api.url}/webhook-endpoints/${created.id}/rotate-secret`, {
      method: 'POST',
      headers: as(ALICE),
    });
    expect(rotated.status).toBe(200);
    const body = rotated.json as { id: string; secret: string; previousSecretExpiresAt: string };
    expect(Object.keys(body)).toStrictEqual(['id', 'secret', 'previousSecretExpiresAt']);
    expect(body.id).toBe(created.id);
    expect(body.secret).toMatch(SECRET);
    expect(body.secret).not.toBe(created.secret);
    // The default overlap: 24 hours.
    const expires = Date.parse(body.previousSecretExpiresAt) - started;
    expect(expires).toBeGreaterThan(86_400_000 - 60_000);
    expect(expires).toBeLessThan(86_400_000 + 60_000);
    const [after] = await store.rows(
      `SELECT secret, previous_secret FROM webhook_endpoints WHERE id = '${created.id}'`,
    );
    expect(after!.previous_secret).toBe(before[0]!.secret);
    expect(JSON.stringify(after)).not.toContain(body.secret.slice('whsec_'.length));
    await send(`${api.url}/webhook-endpoints/${created.id}`, { method: 'DELETE', headers: as(ALICE) });
  });

  it('pings (202, pending) and pages through deliveries newest first with a Link, over REST and tRPC', async () => {
    const { id } = (await register(ALICE, { url: 'http://127.0.0.1:9/p' })).json as { id: string };
    const pings: { id: string }[] = [];
    for (let i = 0; i < 5; i++) {
      const ping = await send(`${api.url}/webhook-endpoints/${id}/ping`, {
        method: 'POST',
        headers: as(ALICE),
      });
      expect(ping.status).toBe(202);
      pings.push(ping.json as { id: string });
    }
    expect(pings[0]).toMatchObject({
      event: 'webhook.ping',
      status: 'pending',
      attempts: 0,
      lastResponseCode: null,
      lastError: null,
    });
    const first = pings[0] as unknown as { nextAttemptAt: string; createdAt: string };
    expect(first.nextAttemptAt).toMatch(ISO);
    expect(first.createdAt).toMatch(ISO);
    const [row] = await store.rows(
      `SELECT payload, event, endpoint_id FROM webhook_deliveries WHERE id = '${pings[0]!.id}'`,
    );
    expect(row).toMatchObject({ event: 'webhook.ping', endpoint_id: id });
    const payload = JSON.parse(String(row!.payload));
    expect(Object.keys(payload)).toStrictEqual(['type', 'endpointId', 'timestamp']);
    expect(payload).toMatchObject({ type: 'webhook.ping', endpointId: id });
    expect(payload.timestamp).toMatch(ISO);

    const newestFirst = (
      (await send(`${api.url}/webhook-endpoints/${id}/deliveries?limit=100`, { headers: as(ALICE) }))
        .json as {
        id: string;
      }[]
    ).map((delivery) => delivery.id);
    expect(new Set(newestFirst)).toStrictEqual(new Set(pings.map((ping) => ping.id)));
    expect(newestFirst[0]).toBe(pings[4]!.id);
    const page = await send(`${api.url}/webhook-endpoints/${id}/deliveries?limit=2`, { headers: as(ALICE) });
    expect((page.json as { id: string }[]).map((delivery) => delivery.id)).toStrictEqual(
      newestFirst.slice(0, 2),
    );
    const link = page.headers.get('link');
    expect(link).toBe(`</webhook-endpoints/${id}/deliveries?limit=2&before=${newestFirst[1]}>; rel="next"`);
    const next = await send(`${api.url}${/<([^>]+)>/.exec(link!)![1]}`, { headers: as(ALICE) });
    expect((next.json as { id: string }[]).map((delivery) => delivery.id)).toStrictEqual(
      newestFirst.slice(2, 4),
    );
    const last = await send(
      `${api.url}/webhook-endpoints/${id}/deliveries?limit=2&before=${newestFirst[3]}`,
      {
        headers: as(ALICE),
      },
    );
    expect((last.json as { id: string }[]).map((delivery) => delivery.id)).toStrictEqual(
      newestFirst.slice(4),
    );
    expect(last.headers.get('link')).toBeNull();
    const unknownBefore = await send(
      `${api.url}/webhook-endpoints/${id}/deliveries?before=msg_${'0'.repeat(32)}`,
      { headers: as(ALICE) },
    );
    expect(unknownBefore.text).toBe(
      errorBody(400, `Invalid request parameters: before must be a delivery of endpoint ${id}.`),
    );

    const alice = trpcAs(api.url, ALICE);
    const viaTrpc = await alice.webhookEndpoints.deliveries.query({ id, limit: 2 });
    expect(viaTrpc.deliveries.map((delivery) => delivery.id)).toStrictEqual(newestFirst.slice(0, 2));
    expect(viaTrpc.next).toBe(newestFirst[1]);
    const pinged = await alice.webhookEndpoints.ping.mutate({ id });
    expect(pinged).toMatchObject({ event: 'webhook.ping', status: 'pending' });
    await alice.webhookEndpoints.delete.mutate({ id });
    expect(await store.rows(`SELECT id FROM webhook_deliveries WHERE endpoint_id = '${id}'`)).toStrictEqual(
      [],
    );
  });

  it('serves every operation over tRPC with the same answers and errors', async () => {
    const alice = trpcAs(api.url, ALICE);
    const created = await alice.webhookEndpoints.create.mutate({
      url: 'http://127.0.0.1:9/t',
      description: 'trpc',
    });
    expect(created.id).toMatch(ENDPOINT_ID);
    expect(created.secret).toMatch(SECRET);
    const { secret: _, ...shown } = created;
    expect(await alice.webhookEndpoints.list.query()).toStrictEqual([shown]);
    expect(await alice.webhookEndpoints.get.query({ id: created.id })).toStrictEqual(shown);
    const rotated = await alice.webhookEndpoints.rotateSecret.mutate({ id: created.id });
    expect(rotated.secret).toMatch(SECRET);
    const ping = await alice.webhookEndpoints.ping.mutate({ id: created.id });
    const again = await alice.webhookEndpoints.redeliver.mutate({ id: created.id, deliveryId: ping.id });
    expect(again).toMatchObject({ id: ping.id, status: 'pending', attempts: 0 });
    expect(
      await trpcError(alice.webhookEndpoints.create.mutate({ url: 'gopher://127.0.0.1/x' })),
    ).toStrictEqual({ status: 400, message: 'url must be an https:// or http:// URL' });
    expect(await trpcError(trpcAs(api.url, PLAIN).webhookEndpoints.list.query())).toStrictEqual({
      status: 403,
      message: 'This token lacks the webhooks scope this operation needs.',
    });
    await alice.webhookEndpoints.delete.mutate({ id: created.id });
    expect(await trpcError(alice.webhookEndpoints.delete.mutate({ id: created.id }))).toMatchObject({
      status: 404,
    });
  });

  if (testStore.name === 'sqlite') {
    it('seals secrets under a key generated once beside the database, private', async () => {
      const file = join(dirname(store.env.DATABASE_URL!.slice('file:'.length)), 'webhook-secrets.key');
      expect(existsSync(file)).toBe(true);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(Buffer.from(readFileSync(file, 'utf8').trim(), 'base64')).toHaveLength(32);
    });
  }
});
