import cors from '@koa/cors';
import type { Middleware } from 'koa';

/**
 * CORS for browser clients on the listed origins only (off unless CORS_ORIGINS is set). Other
 * origins get no CORS headers, so browsers keep them out. Allowed: the methods the REST routes
 * serve (`methods`) and every request header the api reads; exposed: every answer header a client
 * acts on (the next page, the version for `If-Match`, a replayed answer, the limits).
 */
export function corsMiddleware(origins: readonly string[], methods: readonly string[]): Middleware {
  const allowed = new Set(origins);
  return cors({
    origin: (ctx) => (allowed.has(ctx.get('origin')) ? ctx.get('origin') : ''),
    allowMethods: [...methods],
    allowHeaders: [
      'Authorization',
      'Content-Type',
      'X-Request-Id',
      'If-Match',
      'If-None-Match',
      'Idempotency-Key',
      'Last-Event-ID',
      'traceparent',
      'tracestate',
      'trpc-accept',
    ],
    exposeHeaders: [
      'X-Request-Id',
      'Link',
      'ETag',
      'Idempotent-Replayed',
      'RateLimit',
      'RateLimit-Policy',
      'Retry-After',
      'WWW-Authenticate',
    ],
    maxAge: 600,
  });
}
