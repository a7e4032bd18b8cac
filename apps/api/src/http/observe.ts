import { randomUUID } from 'node:crypto';
import type { Middleware } from 'koa';
import type { Logger } from 'pino';
import type { AuthResult } from '../auth/tokens.ts';
import type { Metrics } from '../observability/metrics.ts';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Methods metrics name; any other (PROPFIND, MKCOL, …) is counted as `other`. */
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/**
 * Outermost middleware: security headers on every answer, an `X-Request-Id` (the client's when it
 * is well formed, else a new one) echoed back, and per request one access log line and the request
 * metrics. Routes are named by their template (`ctx.state.route`, set by whoever served it), tokens
 * by their name, never their secret. Every metric label comes from a closed set (methods above,
 * route templates, statuses the server sets, token names), so no client can grow /metrics.
 */
export function observeMiddleware(log: Logger, metrics: Metrics): Middleware {
  return async (ctx, next) => {
    const started = performance.now();
    const given = ctx.req.headers['x-request-id'];
    const requestId = typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    ctx.state.requestId = requestId;
    ctx.set({ 'X-Request-Id': requestId, 'X-Content-Type-Options': 'nosniff', 'Cache-Control': 'no-store' });
    try {
      await next();
    } finally {
      const seconds = (performance.now() - started) / 1000;
      const status = ctx.respond === false ? ctx.res.statusCode : ctx.status;
      const route: string = ctx.state.route ?? 'unmatched';
      const auth = ctx.state.auth as AuthResult | undefined;
      const token = auth?.ok ? auth.principal.tokenName : '-';
      const method = METHODS.has(ctx.method) ? ctx.method : 'other';
      // A JWT principal counts under its issuer: one series per person would grow without bound.
      const hash = token.indexOf('#');
      metrics.requests.series(method, route, status, hash === -1 ? token : token.slice(0, hash)).value += 1;
      metrics.requestSeconds.series(method, route, status).observe(seconds);
      // The request's own logger when it is traced (http/trace-middleware.ts): the line then carries its ids.
      ((ctx.state.log as Logger | undefined) ?? log).info(
        {
          reqId: requestId,
          method: ctx.method,
          route,
          path: ctx.path,
          status,
          ms: Math.round(seconds * 1e5) / 100,
          // Not `token`: the logger redacts that key everywhere.
          tokenName: token,
        },
        'request',
      );
    }
  };
}
