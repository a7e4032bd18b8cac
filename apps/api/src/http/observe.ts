import { randomUUID } from 'node:crypto';
import type { Middleware } from 'koa';
import type { Logger } from 'pino';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Outermost middleware: security headers on every answer, an `X-Request-Id` (the client's when it
 * is well formed, else a new one) echoed back, and one access log line per request.
 */
export function observeMiddleware(log: Logger): Middleware {
  return async (ctx, next) => {
    const started = performance.now();
    const given = ctx.get('x-request-id');
    const requestId = REQUEST_ID.test(given) ? given : randomUUID();
    ctx.state.requestId = requestId;
    ctx.set('X-Request-Id', requestId);
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('Cache-Control', 'no-store');
    try {
      await next();
    } finally {
      log.info(
        {
          reqId: requestId,
          method: ctx.method,
          path: ctx.path,
          status: ctx.respond === false ? ctx.res.statusCode : ctx.status,
          ms: Math.round((performance.now() - started) * 100) / 100,
        },
        'request',
      );
    }
  };
}
