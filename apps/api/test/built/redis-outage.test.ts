import { createServer, type Server } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiProcess, startApiProcess } from '../support/api-process.ts';
import { send, TOKEN, TOKEN_NAME } from '../support/http.ts';
import { redisAvailable, redisUrl } from '../support/redis.ts';
import { startProxy } from '../support/tcp-proxy.ts';
import { freePort } from '../support/webhook-receiver.ts';

/** REDIS_TIMEOUT_MS's default: the most a request waits on Redis. */
const REDIS_TIMEOUT_MS = 250;
/** What we allow on top of it for scheduling on a loaded 2-core machine. */
const SLACK_MS = 500;
/** A second configured token, so scraping /metrics does not spend the first one's budget. */
const SCRAPER = 'plant-store-scraper-token';
const LIMIT = 10;
const FALLBACK = 'redis unavailable: rate limits fall back to this instance’s memory';
const SHARED = 'rate limits use redis: counters are shared by every instance';
/** This file's own Redis database (flushed before use), so no other test's counters mix in. */
const DATABASE = 15;

const started: ApiProcess[] = [];
afterAll(async () => {
  for (const api of started) {
    await api.stop();
    api.cleanup();
  }
});

async function startApi(redis: string): Promise<ApiProcess> {
  const api = await startApiProcess({
    token: `${TOKEN},${SCRAPER}`,
    env: { REDIS_URL: redis, RATE_LIMIT_MAX: String(LIMIT) },
  });
  started.push(api);
  return api;
}

/** One GET /plants with the first token: its status, remaining points and how long it took. */
async function timedGet(api: ApiProcess) {
  const begun = performance.now();
  const answer = await send(`${api.url}/plants?limit=1`, { headers: { authorization: `Bearer ${TOKEN}` } });
  const ms = performance.now() - begun;
  const remaining = Number(/r=(\d+)/.exec(answer.headers.get('ratelimit') ?? '')?.[1]);
  return { status: answer.status, remaining, ms, text: answer.text };
}

/** The rate-limit backend gauge, as scraped from /metrics. */
async function backendGauge(api: ApiProcess) {
  const text = (await send(`${api.url}/metrics`, { headers: { authorization: `Bearer ${SCRAPER}` } })).text;
  const value = (backend: string) =>
    Number(
      new RegExp(`^plant_store_rate_limit_backend\\{backend="${backend}"\\} (\\d+)$`, 'm').exec(text)?.[1],
    );
  return { redis: value('redis'), memory: value('memory') };
}

const count = (api: ApiProcess, message: string) =>
  api.logs.filter((line) => line.includes(`"msg":"${message}"`)).length;

async function waitForLog(api: ApiProcess, message: string, times: number, withinMs = 10_000) {
  const deadline = performance.now() + withinMs;
  while (count(api, message) < times) {
    if (performance.now() > deadline)
      throw new Error(`"${message}" not logged ${times}× within ${withinMs} ms`);
    await sleep(20);
  }
}

describe('rate limits when Redis cannot be reached', () => {
  it('answers at once from memory when nothing listens on the Redis port, logging it once', async () => {
    const api = await startApi(`redis://127.0.0.1:${await freePort()}`);
    await waitForLog(api, FALLBACK, 1);
    const answers = [];
    for (let i = 0; i <= LIMIT; i++) answers.push(await timedGet(api));
    // The in-memory limiter still limits: LIMIT answers, then 429.
    expect(answers.map((a) => a.status)).toEqual([...Array(LIMIT).fill(200), 429]);
    expect(answers.map((a) => a.remaining)).toEqual([9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 0]);
    expect(Math.max(...answers.map((a) => a.ms))).toBeLessThan(REDIS_TIMEOUT_MS + SLACK_MS);
    // ioredis keeps retrying (every second at most); the fallback is logged once, not per attempt.
    await sleep(1_500);
    expect(count(api, FALLBACK)).toBe(1);
    expect(await backendGauge(api)).toEqual({ redis: 0, memory: 1 });
  });

  it('answers from memory within the bound when Redis accepts connections but never answers', async () => {
    const silent: Server = createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const port = (silent.address() as { port: number }).port;
      const api = await startApi(`redis://127.0.0.1:${port}`);
      const answers = [];
      for (let i = 0; i < 5; i++) answers.push(await timedGet(api));
      expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
      expect(answers.map((a) => a.remaining)).toEqual([9, 8, 7, 6, 5]);
      expect(Math.max(...answers.map((a) => a.ms))).toBeLessThan(REDIS_TIMEOUT_MS + SLACK_MS);
      // Its ready check times out: it is never used, and that is logged once.
      await waitForLog(api, FALLBACK, 1);
      await sleep(1_500);
      expect(count(api, FALLBACK)).toBe(1);
      expect(count(api, SHARED)).toBe(0);
      expect(await backendGauge(api)).toEqual({ redis: 0, memory: 1 });
    } finally {
      silent.close();
    }
  });
});

describe.runIf(redisAvailable())(
  'rate limits when a real Redis goes down, goes silent and comes back',
  () => {
    const target = new URL(redisUrl);
    let admin: Redis;
    beforeAll(async () => {
      admin = new Redis(redisUrl, { db: DATABASE });
      await admin.flushdb();
    });
    afterAll(async () => {
      await admin.flushdb();
      admin.disconnect();
    });

    it('keeps answering within the bound from memory, logs each change once, and shares counters again', async () => {
      const proxy = await startProxy({ host: target.hostname, port: Number(target.port || 6379) });
      try {
        const url = `redis://127.0.0.1:${proxy.port}/${DATABASE}`;
        const one = await startApi(url);
        const two = await startApi(url);
        for (const api of [one, two]) await waitForLog(api, SHARED, 1);

        // Up: two instances spend one budget.
        expect(
          [await timedGet(one), await timedGet(two), await timedGet(one)].map((a) => a.remaining),
        ).toEqual([9, 8, 7]);
        expect(await admin.get(`plant-store:rate:token:${TOKEN_NAME}`)).toBe('3');

        // Down (connections reset, new ones refused): each instance counts alone, at once.
        proxy.setMode('down');
        const down = [await timedGet(one), await timedGet(one), await timedGet(two)];
        expect(down.map((a) => [a.status, a.remaining])).toEqual([
          [200, 9],
          [200, 8],
          [200, 9],
        ]);
        expect(Math.max(...down.map((a) => a.ms))).toBeLessThan(REDIS_TIMEOUT_MS + SLACK_MS);
        for (const api of [one, two]) {
          await waitForLog(api, FALLBACK, 1);
          expect(await backendGauge(api)).toEqual({ redis: 0, memory: 1 });
        }

        proxy.setMode('up');
        for (const api of [one, two]) await waitForLog(api, SHARED, 2);

        // Silent (a partition: connections stay open, nothing answers): a request waits at most
        // REDIS_TIMEOUT_MS, then the connection is dropped and the next ones do not wait at all.
        proxy.setMode('blackhole');
        const silent = [];
        for (let i = 0; i < 4; i++) silent.push(await timedGet(one), await timedGet(two));
        expect(silent.map((a) => a.status)).toEqual(Array(8).fill(200));
        expect(Math.max(...silent.map((a) => a.ms))).toBeLessThan(REDIS_TIMEOUT_MS + SLACK_MS);
        expect(silent.slice(2).every((a) => a.ms < REDIS_TIMEOUT_MS)).toBe(true);
        for (const api of [one, two]) await waitForLog(api, FALLBACK, 2);

        // Back: the shared counter is used again, where it was left before the outages.
        proxy.setMode('up');
        for (const api of [one, two]) await waitForLog(api, SHARED, 3);
        expect([await timedGet(two), await timedGet(one)].map((a) => a.remaining)).toEqual([6, 5]);
        expect(await admin.get(`plant-store:rate:token:${TOKEN_NAME}`)).toBe('5');
        for (const api of [one, two]) {
          expect(await backendGauge(api)).toEqual({ redis: 1, memory: 0 });
          // One line per change, not per request or per reconnection attempt.
          expect([count(api, FALLBACK), count(api, SHARED)]).toEqual([2, 3]);
          expect(api.child.exitCode).toBeNull();
        }
      } finally {
        await proxy.close();
      }
    });
  },
);
