import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import superjson from 'superjson';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { send, TOKEN } from '../support/http.ts';
import { type RunningApi, startInProcess } from '../support/in-process.ts';
import { waitForLogs } from '../support/logs.ts';
import { redisAvailable, redisUrl } from '../support/redis.ts';
import { sqliteTestStore, type TestStore, type TestStoreInstance, testStores } from '../support/stores.ts';

/** API_TOKENS: two tokens, each with its own budget (each named by its digest). */
const ALICE = 'alice-token-0123456789';
const BOB = 'bob-token-0123456789';
const get = (api: RunningApi, token?: string) =>
  send(`${api.url}/plants`, { headers: token ? { authorization: `Bearer ${token}` } : {} });

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

/** A fresh store of `testStore`'s kind, removed after the file. */
async function freshStore(testStore: TestStore): Promise<TestStoreInstance> {
  const store = await testStore.setup();
  cleanups.push(() => store.teardown());
  return store;
}

/**
 * The api on `store`, with its own limiter: `points` requests per 60 s, for ALICE and BOB. The
 * limit on failed authentications is off: its own test is auth-failures.test.ts.
 */
async function start(
  store: TestStoreInstance,
  points: number,
  options: Parameters<typeof startInProcess>[0] = {},
): Promise<RunningApi> {
  const api = await startInProcess({
    token: `${ALICE},${BOB}`,
    ...options,
    env: {
      ...store.env,
      RATE_LIMIT_MAX: String(points),
      RATE_LIMIT_WINDOW_SECONDS: '60',
      AUTH_FAILURE_MAX: '0',
      ...options.env,
    },
  });
  cleanups.push(async () => {
    await api.stop();
    api.cleanup();
  });
  return api;
}

describe.each(testStores())('rate limiting in memory on $name', (testStore) => {
  let store: TestStoreInstance;
  beforeAll(async () => {
    store = await freshStore(testStore);
  });

  it('answers 429 with an Error body, Retry-After and RateLimit headers past the limit, per token', async () => {
    const api = await start(store, 3);
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push(await get(api, ALICE));
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200, 429]);
    expect(answers.map((answer) => answer.headers.get('ratelimit'))).toEqual([
      expect.stringMatching(/^"default";r=2;t=(59|60)$/),
      expect.stringMatching(/^"default";r=1;t=(59|60)$/),
      expect.stringMatching(/^"default";r=0;t=(59|60)$/),
      expect.stringMatching(/^"default";r=0;t=(59|60)$/),
    ]);
    const limited = answers[3]!;
    expect(limited.headers.get('ratelimit-policy')).toBe('"default";q=3;w=60');
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(59);
    expect(limited.json).toEqual({
      error: 429,
      message: expect.stringMatching(/^Too many requests: the limit is 3 per 60 s; retry in \d+ s\.$/),
    });
    // Another token has its own budget; probes are never limited.
    expect((await get(api, BOB)).status).toBe(200);
    expect((await send(`${api.url}/healthz`)).status).toBe(200);
  });

  it('limits requests without a valid token by client address', async () => {
    const api = await start(store, 3);
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await get(api, 'wrong')).status);
    expect(statuses).toEqual([401, 401, 401, 429]);
    expect((await get(api, ALICE)).status).toBe(200);
  });

  it('limits /metrics like any route that checks a token', async () => {
    const api = await start(store, 3);
    const scrape = (token: string) =>
      send(`${api.url}/metrics`, { headers: { authorization: `Bearer ${token}` } });
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await scrape(ALICE)).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
    const guesses = [];
    for (let i = 0; i < 4; i++) guesses.push((await scrape(`guess-${i}`)).status);
    expect(guesses).toEqual([401, 401, 401, 429]);
  });

  it('limits creates before storing anything', async () => {
    const api = await start(store, 3);
    const post = (id: number) =>
      send(`${api.url}/plants`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ALICE}`, 'content-type': 'application/json' },
        body: `{"id":${id},"name":"Fern"}`,
      });
    const statuses = [];
    for (let id = 1; id <= 5; id++) statuses.push((await post(id)).status);
    expect(statuses).toEqual([200, 200, 200, 429, 429]);
    expect(await store.ids()).toEqual([1n, 2n, 3n]);
  });
});

describe.each(testStores())('rate limiting of tRPC batches on $name', (testStore) => {
  const trpc = (
    api: RunningApi,
    token: string,
    paths: string[],
    init: { method?: string; body?: string; query?: string } = {},
  ) =>
    send(`${api.url}/trpc/${paths.join(',')}?batch=1${init.query ?? ''}`, {
      method: init.method ?? 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: init.body,
    });
  const creates = (ids: bigint[]) =>
    JSON.stringify(Object.fromEntries(ids.map((id, i) => [i, superjson.serialize({ id, name: 'Fern' })])));

  it('counts every call of a batch, and answers 429 to a batch larger than the points left, storing nothing', async () => {
    const store = await freshStore(testStore);
    const api = await start(store, 5);
    const paths = ['plants.create', 'plants.create', 'plants.create'];
    const first = await trpc(api, ALICE, paths, { body: creates([1n, 2n, 3n]) });
    expect(first.status).toBe(200);
    expect(first.headers.get('ratelimit')).toMatch(/^"default";r=2;t=(59|60)$/);
    const second = await trpc(api, ALICE, paths, { body: creates([4n, 5n, 6n]) });
    expect(second.status).toBe(429);
    expect(second.headers.get('retry-after')).toMatch(/^(59|60)$/);
    // Under /trpc, in tRPC's shape: one error, which @trpc/client gives every call of the batch.
    expect(second.json).toEqual({
      error: {
        json: {
          message: expect.stringMatching(/^Too many requests: the limit is 5 per 60 s; retry in \d+ s\.$/),
          code: -32029,
          data: { code: 'TOO_MANY_REQUESTS', httpStatus: 429 },
        },
      },
    });
    expect(await store.ids()).toEqual([1n, 2n, 3n]);

    // Queries batched in a GET count the same way, with percent-encoded commas too.
    const input = encodeURIComponent(
      JSON.stringify({ 0: superjson.serialize({ limit: 1 }), 1: superjson.serialize({ limit: 2 }) }),
    );
    const lists = await trpc(api, BOB, ['plants.list%2Cplants.list'], {
      method: 'GET',
      query: `&input=${input}`,
    });
    expect(lists.status).toBe(200);
    expect(lists.headers.get('ratelimit')).toMatch(/^"default";r=3;t=(59|60)$/);
    const single = await send(`${api.url}/plants`, { headers: { authorization: `Bearer ${BOB}` } });
    expect(single.headers.get('ratelimit')).toMatch(/^"default";r=2;t=(59|60)$/);
  });
});

describe.runIf(redisAvailable())('rate limiting in Redis', () => {
  it('holds one limit across instances sharing Redis', async () => {
    // Token names of this run only: counters are keyed by token name, and Redis may hold another
    // run's for up to a window.
    const suffix = `-${randomUUID()}`;
    const startShared = async () => {
      const api = await start(await freshStore(sqliteTestStore), 3, {
        // ALICE only as an issued token: its counters are then keyed by the name above.
        token: TOKEN,
        env: { REDIS_URL: redisUrl },
        tokens: [{ name: `alice${suffix}`, secret: ALICE, scopes: ['read'] }],
      });
      // The limiter uses Redis only once the client is ready (memory until then).
      await waitForLogs(api, 'rate limits use redis: counters are shared by every instance');
      return api;
    };
    const one = await startShared();
    const two = await startShared();
    const statuses = [
      (await get(one, ALICE)).status,
      (await get(two, ALICE)).status,
      (await get(one, ALICE)).status,
      (await get(two, ALICE)).status,
    ];
    expect(statuses).toEqual([200, 200, 200, 429]);
    const limited = await get(one, ALICE);
    expect(limited.text).toMatch(/^\{"error":429,"message":"Too many requests/);
    // Leave nothing behind (the counters would expire with their window anyway).
    const admin = new Redis(redisUrl);
    cleanups.push(() => admin.disconnect());
    const keys = await admin.keys(`plant-store:rate:token:alice${suffix}`);
    expect(keys.length).toBeGreaterThan(0);
    await admin.del(...keys);
  });
});
