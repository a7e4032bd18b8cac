import cors from '@koa/cors';
import type { Middleware } from 'koa';

/**
 * CORS for browser clients on the listed origins only (off unless CORS_ORIGINS is set). Other
 * origins get no CORS headers, so browsers keep them out.
 */
export function corsMiddleware(origins: readonly string[]): Middleware {
  const allowed = new Set(origins);
  return cors({
    origin: (ctx) => (allowed.has(ctx.get('origin')) ? ctx.get('origin') : ''),
    allowMethods: ['GET', 'POST', 'DELETE'],
    allowHeaders: ['Authorization', 'Content-Type', 'X-Request-Id', 'trpc-accept'],
    exposeHeaders: [
      'X-Request-Id',
      'Link',
      'RateLimit',
      'RateLimit-Policy',
      'Retry-After',
      'WWW-Authenticate',
    ],
    maxAge: 600,
  });
}
