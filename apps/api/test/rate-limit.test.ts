import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
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
    tokens: TOKENS.map((token) => ({ ...token, scopes: [...token.scopes] })),
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

describe.runIf(redisAvailable())('rate limiting in Redis', () => {
  it('holds one limit across instances sharing Redis', async () => {
    const prefix = randomUUID();
    const connect = () => {
      const client = new Redis(redisUrl, { keyPrefix: `${prefix}:` });
      clients.push(client);
      return client;
    };
    const one = await start(connect());
    const two = await start(connect());
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
