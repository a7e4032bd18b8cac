import type { Middleware } from 'koa';
import { type RateLimiterAbstract, RateLimiterRes } from 'rate-limiter-flexible';
import type { AuthResult } from './tokens.ts';
import { RequestError } from '../errors.ts';
import type { RateLimit } from '../http/rate-limit.ts';

/**
 * Bounds failed authentication per client address, on every route that checks a token: each
 * request whose bearer token is not valid (an unknown or malformed one) counts; past `limit` in a
 * window, such requests are answered 429 with `Retry-After` and an `Error` body instead of 401.
 * Requests with a valid token, or with none, neither count nor are refused here: a lockout would
 * let one client shut out every client behind the same address (a NAT, a proxy).
 */
export function authFailureMiddleware(limiter: RateLimiterAbstract, limit: RateLimit): Middleware {
  const refuseOverLimit: Middleware = async (ctx, next) => {
    try {
      await limiter.consume(`ip:${ctx.ip}`);
    } catch (rejection) {
      if (!(rejection instanceof RateLimiterRes)) throw rejection;
      const retrySeconds = Math.max(1, Math.ceil(rejection.msBeforeNext / 1000));
      throw new RequestError(
        'rate_limited',
        `Too many failed authentications from this address: the limit is ${limit.points} per ${limit.windowSeconds} s; retry in ${retrySeconds} s.`,
        { headers: { 'Retry-After': String(retrySeconds) } },
      );
    }
    return next();
  };
  // Not an async function for the requests it lets through: see own-paths.ts.
  return (ctx, next) => {
    const auth = ctx.state.auth as AuthResult;
    return auth.ok || auth.reason === 'missing' ? next() : refuseOverLimit(ctx, next);
  };
}
