import type { Middleware } from 'koa';
import { methodNotAllowed } from '../errors.ts';
import { storeCall } from '../operation.ts';
import type { PlantStore } from '../store/store.ts';

const OK = JSON.stringify({ status: 'ok' });

/**
 * Unauthenticated probes for load balancers and orchestrators. `GET /healthz`: the process is up
 * (never touches the store). `GET /readyz`: the store answers a query, else 503 with an `Error` body
 * from the error middleware, within the store's own time bound (`DATABASE_TIMEOUT_MS`).
 */
export function healthMiddleware(store: PlantStore): Middleware {
  return async (ctx, next) => {
    if (ctx.path !== '/healthz' && ctx.path !== '/readyz') return next();
    ctx.state.route = ctx.path;
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
      throw methodNotAllowed(ctx.method, ['GET', 'HEAD']);
    }
    if (ctx.path === '/readyz') await storeCall(() => store.ping());
    ctx.type = 'application/json';
    ctx.body = OK;
  };
}
