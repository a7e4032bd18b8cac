import { setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { type Backend, connectRedis } from '../../src/http/rate-limit-redis.ts';
import { redisAvailable, redisUrl } from '../support/redis.ts';
import { startProxy } from '../support/tcp-proxy.ts';

/** REDIS_TIMEOUT_MS's default. */
const TIMEOUT_MS = 250;

describe.runIf(redisAvailable())('the rate limiter’s Redis connection after a partition heals', () => {
  // ioredis before 6.0.0 kept one socket-timeout timer per client, armed by a command on the old
  // connection and never cleared when it closed (redis/ioredis#2147): it then destroyed the new,
  // healthy connection, so rate limits fell back to memory a second time right after they were
  // shared again. Requests sent in that window counted per instance.
  it('stays on Redis once ready: a command left unanswered on the old connection does not cut the new one', async () => {
    const target = new URL(redisUrl);
    // Partitioned from the start: the first connection's ready check (INFO) is never answered.
    const proxy = await startProxy({ host: target.hostname, port: Number(target.port || 6379) });
    proxy.setMode('blackhole');
    const backends: Backend[] = [];
    const redis = connectRedis(`redis://127.0.0.1:${proxy.port}`, {
      timeoutMs: TIMEOUT_MS,
      log: pino({ level: 'silent' }),
      onBackend: (backend) => backends.push(backend),
    });
    try {
      await sleep(50);
      // Healed well before that command's socket timeout: the proxy resets the stale connection.
      proxy.setMode('up');
      const deadline = performance.now() + 2_000;
      while (redis.status !== 'ready' && performance.now() < deadline) await sleep(5);
      expect(redis.status).toBe('ready');
      // Past the old command's deadline, then some.
      await sleep(TIMEOUT_MS * 2);
      expect(backends).toEqual(['memory', 'redis']);
      expect(redis.status).toBe('ready');
      expect(await redis.ping()).toBe('PONG');
    } finally {
      redis.disconnect();
      await proxy.close();
    }
  });
});
