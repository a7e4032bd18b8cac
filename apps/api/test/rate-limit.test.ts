import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { Redis } from 'ioredis';
import superjson from 'superjson';
import { afterAll, describe, expect, it } from 'vitest';
import { createTokenVerifier } from '../src/auth.ts';
import { createRateLimiter } from '../src/http/rate-limit.ts';
import { send } from './support/http.ts';
import { type InProcessApi, startInProcess } from './support/in-process.ts';
import { redisAvailable, redisUrl } from './support/redis.ts';

const TOKENS = [
  { name: 'alice', secret: 'alice-token', scopes: ['read', 'write'] as const },
  { name: 'bob', secret: 'bob-token', scopes: ['read', 'write'] as const },
];
const limit = { points: 3, windowSeconds: 60 };
const get = (api: InProcessApi, token?: string) =>
  send(`${api.url}/plants`, { headers: token ? { authorization: `Bearer ${token}` } : {} });

const started: InProcessApi[] = [];
const clients: Redis[] = [];
afterAll(async () => {
  for (const api of started) await api.close();
  for (const client of clients) client.disconnect();
});

async function start(redis?: Redis) {
  const api = await startInProcess({
    verifier: createTokenVerifier(TOKENS),
    rateLimit: { limiter: createRateLimiter(limit, redis), limit },
  });
  started.push(api);
  return api;
}

describe('rate limiting in memory', () => {
  it('answers 429 with an Error body, Retry-After and RateLimit headers past the limit, per token', async () => {
    const api = await start();
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push(await get(api, 'alice-token'));
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
    expect((await get(api, 'bob-token')).status).toBe(200);
    expect((await send(`${api.url}/healthz`)).status).toBe(200);
  });

  it('limits requests without a valid token by client address', async () => {
    const api = await start();
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await get(api, 'wrong')).status);
    expect(statuses).toEqual([401, 401, 401, 429]);
    expect((await get(api, 'alice-token')).status).toBe(200);
  });

  it('limits /metrics like any route that checks a token', async () => {
    const api = await start();
    const scrape = (token: string) =>
      send(`${api.url}/metrics`, { headers: { authorization: `Bearer ${token}` } });
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await scrape('alice-token')).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
    const guesses = [];
    for (let i = 0; i < 4; i++) guesses.push((await scrape(`guess-${i}`)).status);
    expect(guesses).toEqual([401, 401, 401, 429]);
  });

  it('limits creates before storing anything', async () => {
    const api = await start();
    const post = (id: number) =>
      send(`${api.url}/plants`, {
        method: 'POST',
        headers: { authorization: 'Bearer alice-token', 'content-type': 'application/json' },
        body: `{"id":${id},"name":"Fern"}`,
      });
    const statuses = [];
    for (let id = 1; id <= 5; id++) statuses.push((await post(id)).status);
    expect(statuses).toEqual([200, 200, 200, 429, 429]);
    expect(await api.store.ids()).toEqual([1n, 2n, 3n]);
  });
});

describe('rate limiting of tRPC batches', () => {
  const batchLimit = { points: 5, windowSeconds: 60 };
  const trpc = (
    api: InProcessApi,
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
    const api = await startInProcess({
      verifier: createTokenVerifier(TOKENS),
      rateLimit: { limiter: createRateLimiter(batchLimit, undefined), limit: batchLimit },
    });
    started.push(api);
    const paths = ['plants.create', 'plants.create', 'plants.create'];
    const first = await trpc(api, 'alice-token', paths, { body: creates([1n, 2n, 3n]) });
    expect(first.status).toBe(200);
    expect(first.headers.get('ratelimit')).toMatch(/^"default";r=2;t=(59|60)$/);
    const second = await trpc(api, 'alice-token', paths, { body: creates([4n, 5n, 6n]) });
    expect(second.status).toBe(429);
    expect(second.headers.get('retry-after')).toMatch(/^(59|60)$/);
    expect(second.json).toEqual({
      error: 429,
      message: expect.stringMatching(/^Too many requests: the limit is 5 per 60 s; retry in \d+ s\.$/),
    });
    expect(await api.store.ids()).toEqual([1n, 2n, 3n]);

    // Queries batched in a GET count the same way, with percent-encoded commas too.
    const input = encodeURIComponent(
      JSON.stringify({ 0: superjson.serialize({ limit: 1 }), 1: superjson.serialize({ limit: 2 }) }),
    );
    const lists = await trpc(api, 'bob-token', ['plants.list%2Cplants.list'], {
      method: 'GET',
      query: `&input=${input}`,
    });
    expect(lists.status).toBe(200);
    expect(lists.headers.get('ratelimit')).toMatch(/^"default";r=3;t=(59|60)$/);
    const single = await send(`${api.url}/plants`, { headers: { authorization: 'Bearer bob-token' } });
    expect(single.headers.get('ratelimit')).toMatch(/^"default";r=2;t=(59|60)$/);
  });
});

describe.runIf(redisAvailable())('rate limiting in Redis', () => {
  it('holds one limit across instances sharing Redis', async () => {
    const prefix = randomUUID();
    // The limiter uses Redis only once the client is ready (memory until then).
    const connect = async () => {
      const client = new Redis(redisUrl, { keyPrefix: `${prefix}:` });
      clients.push(client);
      await once(client, 'ready');
      return client;
    };
    const one = await start(await connect());
    const two = await start(await connect());
    const statuses = [
      (await get(one, 'alice-token')).status,
      (await get(two, 'alice-token')).status,
      (await get(one, 'alice-token')).status,
      (await get(two, 'alice-token')).status,
    ];
    expect(statuses).toEqual([200, 200, 200, 429]);
    const limited = await get(one, 'alice-token');
    expect(limited.text).toMatch(/^\{"error":429,"message":"Too many requests/);
    // Leave nothing behind (the counters would expire with their window anyway).
    const admin = new Redis(redisUrl);
    clients.push(admin);
    const keys = await admin.keys(`${prefix}:*`);
    expect(keys.length).toBeGreaterThan(0);
    await admin.del(...keys);
  });
});
