import { nodeHTTPRequestHandler } from '@trpc/server/adapters/node-http';
import type { Middleware } from 'koa';
import type { AppRouter } from '../router.ts';
import type { Context } from '../trpc.ts';
import { BODY_LIMIT_BYTES } from './body.ts';

const PREFIX = '/trpc/';

/** Serves the tRPC wire protocol (what @trpc/client speaks) under /trpc. */
export function trpcAdapter(
  router: AppRouter,
  createContext: (authorization: string | undefined) => Context,
): Middleware {
  return async (ctx, next) => {
    if (!ctx.path.startsWith(PREFIX)) return next();
    // Koa presets 404 and tRPC only overwrites non-200 statuses: hand it the raw response.
    ctx.respond = false;
    ctx.res.statusCode = 200;
    await nodeHTTPRequestHandler({
      router,
      req: ctx.req,
      res: ctx.res,
      path: ctx.path.slice(PREFIX.length),
      maxBodySize: BODY_LIMIT_BYTES,
      createContext: () => createContext(ctx.get('authorization') || undefined),
    });
  };
}
