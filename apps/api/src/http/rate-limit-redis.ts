import { Redis } from 'ioredis';
import type { Logger } from 'pino';

/** Where rate-limit counters are kept: Redis while it is ready, this process's memory otherwise. */
export type Backend = 'redis' | 'memory';

/**
 * The Redis client for shared rate-limit counters, bounded so that Redis never holds a request for
 * longer than `timeoutMs`, whatever it does:
 * - down (refused, or not yet reconnected): a command fails at once (no offline queue), and the
 *   rate limiter, which only sends commands while the client is ready, answers from memory;
 * - silent (a partition, a stuck server): a command fails after `timeoutMs`, and the connection is
 *   dropped after `timeoutMs` without an answer; a server that accepts connections but never
 *   answers never passes the ready check (its INFO times out);
 * - reconnecting: every 100 ms at first, then every second at most, so a Redis that comes back is
 *   used again within about a second.
 * `onBackend` hears each change of where counters are kept (not each failed command), and it is
 * logged once per change.
 *
 * Imported dynamically by server.ts, so a deployment without `REDIS_URL` never loads ioredis; this
 * module imports it statically so the bundler keeps ioredis's CommonJS exports intact in the chunk
 * (a dynamic `import('ioredis')` in the bundle had no named `Redis` export).
 */
export function connectRedis(
  url: string,
  options: { timeoutMs: number; log: Logger; onBackend?: (backend: Backend) => void },
): Redis {
  const { timeoutMs, log, onBackend } = options;
  const redis = new Redis(url, {
    enableOfflineQueue: false,
    connectTimeout: timeoutMs,
    commandTimeout: timeoutMs,
    socketTimeout: timeoutMs,
    // A command in flight when the connection drops fails then, instead of waiting to be resent.
    maxRetriesPerRequest: 0,
    retryStrategy: (attempt) => Math.min(attempt * 100, 1_000),
  });
  let backend: Backend = 'memory';
  let reported = false;
  const use = (next: Backend, reason?: string) => {
    if (next === backend && reported) return;
    backend = next;
    reported = true;
    onBackend?.(next);
    if (next === 'redis') log.info('rate limits use redis: counters are shared by every instance');
    else log.warn({ reason }, 'redis unavailable: rate limits fall back to this instance’s memory');
  };
  redis.on('ready', () => use('redis'));
  redis.on('error', (error: Error) => use('memory', error.message));
  // Not 'close': that also ends a deliberate disconnect at shutdown.
  redis.on('reconnecting', () => use('memory', 'connection lost'));
  return redis;
}
