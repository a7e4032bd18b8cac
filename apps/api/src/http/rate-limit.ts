import type { Redis } from 'ioredis';
import type { Middleware } from 'koa';
import {
  type RateLimiterAbstract,
  RateLimiterMemory,
  RateLimiterRedis,
  RateLimiterRes,
} from 'rate-limiter-flexible';
import type { AuthResult } from '../auth/tokens.ts';
import { RequestError } from '../errors.ts';

export type RateLimit = { points: number; windowSeconds: number };

/**
 * Counters in Redis when a client is given, so the limit holds across instances; in memory
 * otherwise. While Redis is not ready (down, reconnecting, or silent: see redis.ts) and for any
 * command that fails, the in-memory limiter answers instead (per instance), at once: the request
 * never waits on Redis beyond the client's command timeout. `name` keeps limiters' keys apart.
 */
export function createRateLimiter(
  { points, windowSeconds }: RateLimit,
  redis?: Redis,
  name = 'rate',
): RateLimiterAbstract {
  // Each limiter keeps its own counters in memory: no prefix, so a key is looked up as it is given
  // (rateLimitMiddleware hands the same string for a token every time, its hash computed once).
  const memory = new RateLimiterMemory({ points, duration: windowSeconds, keyPrefix: '' });
  if (redis === undefined) return memory;
  return new RateLimiterRedis({
    storeClient: redis,
    points,
    duration: windowSeconds,
    keyPrefix: `plant-store:${name}`,
    insuranceLimiter: memory,
    rejectIfRedisNotReady: true,
  });
}

const TRPC_PREFIX = '/trpc/';

/**
 * What a request costs: 1, or for /trpc one point per procedure call it names
 * (`/trpc/a,b,c?batch=1` costs 3), so a batch can do no more work than the limit allows.
 */
function cost(path: string): number {
  if (!path.startsWith(TRPC_PREFIX)) return 1;
  try {
    return decodeURIComponent(path.slice(TRPC_PREFIX.length)).split(',').length;
  } catch {
    return 1;
  }
}

/**
 * Limits requests per token (per client address before a valid token), each tRPC call of a batch
 * counting as one request: past the limit, 429 with an `Error` body and `Retry-After`. Every limited answer carries the IETF RateLimit headers
 * (draft-ietf-httpapi-ratelimit-headers): `RateLimit-Policy: "default";q=<points>;w=<seconds>` and
 * `RateLimit: "default";r=<remaining>;t=<seconds until the window resets>`.
 */
export function rateLimitMiddleware(limiter: RateLimiterAbstract, limit: RateLimit): Middleware {
  const policy = `"default";q=${limit.points};w=${limit.windowSeconds}`;
  // One key string per principal name (bounded below: JWT principals are not few).
  const tokenKeys = new Map<string, string>();
  const tokenKey = (name: string) => {
    let key = tokenKeys.get(name);
    if (key === undefined) {
      if (tokenKeys.size >= 10_000) tokenKeys.clear();
      key = `token:${name}`;
      tokenKeys.set(name, key);
    }
    return key;
  };
  return async (ctx, next) => {
    const auth = ctx.state.auth as AuthResult;
    const key = auth.ok ? tokenKey(auth.principal.tokenName) : `ip:${ctx.ip}`;
    let state: RateLimiterRes;
    let limited = false;
    try {
      state = await limiter.consume(key, cost(ctx.path));
    } catch (rejection) {
      if (!(rejection instanceof RateLimiterRes)) throw rejection;
      state = rejection;
      limited = true;
    }
    const resetSeconds = Math.max(1, Math.ceil(state.msBeforeNext / 1000));
    // Before any answer: on node's response itself, as observe.ts sets its headers.
    ctx.res.setHeader('RateLimit-Policy', policy);
    ctx.res.setHeader('RateLimit', `"default";r=${Math.max(0, state.remainingPoints)};t=${resetSeconds}`);
    if (limited) {
      throw new RequestError(
        'rate_limited',
        `Too many requests: the limit is ${limit.points} per ${limit.windowSeconds} s; retry in ${resetSeconds} s.`,
        { headers: { 'Retry-After': String(resetSeconds) } },
      );
    }
    await next();
  };
}
