import type { Middleware } from 'koa';
import type { TokenVerifier } from './tokens.ts';

/**
 * Checks the request's bearer token once, for every route, into `ctx.state.auth`: operations
 * authorize with it (401/403 are theirs to answer), and logs, metrics and the rate limiter name the
 * token by it.
 */
export function authMiddleware(verifyToken: TokenVerifier): Middleware {
  return (ctx, next) => {
    ctx.state.auth = verifyToken.verify(ctx.get('authorization') || undefined);
    return next();
  };
}
