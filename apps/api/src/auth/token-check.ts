import type { Middleware } from 'koa';
import type { JwtVerifier } from './jwt-verifier.ts';
import type { TokenVerifier } from './tokens.ts';

// A bearer token in JWS compact form (RFC 7515 §7.1; the signature may be empty, as `alg: none`
// makes it, to be refused as a JWT): its header is base64url JSON, so it starts with `eyJ`.
const BEARER_JWT = /^bearer +(eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*) *$/i;

/**
 * Checks the request's bearer token once, for every route, into `ctx.state.auth`: operations
 * authorize with it (401/403 are theirs to answer), and logs, metrics and the rate limiter name the
 * token by it. With identity providers configured, a token in JWT form is checked as a JWT access
 * token (`jwt`); any other goes to the opaque tokens (`verifyToken`).
 */
export function authMiddleware(verifyToken: TokenVerifier, jwt?: JwtVerifier): Middleware {
  return (ctx, next) => {
    const authorization = ctx.get('authorization') || undefined;
    const token = jwt && authorization !== undefined ? BEARER_JWT.exec(authorization)?.[1] : undefined;
    if (token === undefined) {
      ctx.state.auth = verifyToken.verify(authorization);
      return next();
    }
    const result = jwt!.verify(token);
    if (!(result instanceof Promise)) {
      ctx.state.auth = result;
      return next();
    }
    return result.then((auth) => {
      ctx.state.auth = auth;
      return next();
    });
  };
}
