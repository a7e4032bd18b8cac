import type { Middleware } from 'koa';
import { methodNotAllowed } from '../errors.ts';
import { storeCall } from '../operations/operation.ts';
import type { PlantStore } from '../store/contract.ts';
import { type OwnPaths, ownPaths } from './own-paths.ts';

const OK = JSON.stringify({ status: 'ok' });

/** A `/readyz` answer stands for this long after its store call began: at most one call per interval. */
export const READINESS_INTERVAL_MS = 1_000;

/**
 * Unauthenticated probes for load balancers and orchestrators. `GET /healthz`: the process is up
 * (never touches the store). `GET /readyz`: the store answers a query, else 503 with an `Error` body
 * from the error middleware, within the store's own time bound (`DATABASE_TIMEOUT_MS`). Nobody's
 * token limits /readyz, so its callers share one store call (see `sharedCall`): any number of them
 * cost at most one query (on PostgreSQL, one pool connection) per `READINESS_INTERVAL_MS`.
 */
export function healthPaths(store: PlantStore): OwnPaths {
  const ping = sharedCall(() => store.ping(), READINESS_INTERVAL_MS);
  const serve: Middleware = async (ctx) => {
    ctx.state.route = ctx.path;
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
      throw methodNotAllowed(ctx.method, ['GET', 'HEAD']);
    }
    if (ctx.path === '/readyz') await storeCall(ping);
    ctx.type = 'application/json';
    ctx.body = OK;
  };
  return ownPaths((path) => path === '/healthz' || path === '/readyz', serve);
}

/**
 * `call`, shared: while one is in flight every caller gets its outcome, and once it settles its
 * outcome (success or failure) is reused until `intervalMs` after it began. Measured from the start,
 * so a call that ran out its timeout is never reused once it ends.
 */
export function sharedCall(call: () => Promise<void>, intervalMs: number): () => Promise<void> {
  let last: Promise<void> | undefined;
  let startedAt = 0;
  let settled = true;
  return () => {
    const now = performance.now();
    if (last !== undefined && (!settled || now - startedAt < intervalMs)) return last;
    startedAt = now;
    settled = false;
    last = call().finally(() => {
      settled = true;
    });
    return last;
  };
}
