import type { Middleware } from 'koa';
import { methodNotAllowed } from '../errors.ts';
import type { Metrics } from '../observability/metrics.ts';
import { authorize } from '../operations/operation.ts';
import { type OwnPaths, ownPaths } from './own-paths.ts';

/**
 * `GET /metrics` in Prometheus text format, for a token with the `metrics` scope (scrapers send it
 * as a bearer token): it names every token, so a `read` token gets 403.
 */
export function metricsPaths(metrics: Metrics): OwnPaths {
  const serve: Middleware = async (ctx) => {
    ctx.state.route = ctx.path;
    if (ctx.method !== 'GET') {
      throw methodNotAllowed(ctx.method, ['GET']);
    }
    authorize(ctx.state.auth, 'metrics');
    ctx.type = metrics.registry.contentType;
    ctx.body = await metrics.registry.metrics();
  };
  return ownPaths((path) => path === '/metrics', serve);
}
