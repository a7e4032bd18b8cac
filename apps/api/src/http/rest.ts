import { stringifyJson } from '@plant-store/schema';
import type { AnyProcedure } from '@trpc/server';
import type { Middleware } from 'koa';
import { forEachOpenApiProcedure, getPathRegExp, normalizePath, type OpenApiMethod } from 'trpc-to-openapi';
import type { AppRouter } from '../router.ts';
import type { Context } from '../trpc.ts';
import { readJsonBody } from './body.ts';

export type RestRoute = {
  method: OpenApiMethod;
  path: string;
  pattern: RegExp;
  procedurePath: string;
  procedure: AnyProcedure;
};

/** The REST route table, read from the procedures' trpc-to-openapi metadata. */
export function restRoutes(router: AppRouter): RestRoute[] {
  const routes: RestRoute[] = [];
  forEachOpenApiProcedure(router._def.procedures, ({ path, procedure, meta }) => {
    const routePath = normalizePath(meta.openapi.path);
    routes.push({
      method: meta.openapi.method,
      path: routePath,
      pattern: getPathRegExp(routePath),
      procedurePath: path,
      procedure: procedure as unknown as AnyProcedure,
    });
  });
  return routes;
}

/**
 * Serves the REST routes by calling their tRPC procedures directly: the same auth, validation and
 * store code as /trpc, without building a Fetch Request per call. The body is read lazily, after
 * the procedure's auth middleware has passed. Errors are thrown to the error middleware.
 */
export function restAdapter(routes: RestRoute[], createContext: (authorization: string | undefined) => Context): Middleware {
  return async (ctx, next) => {
    const onPath = routes.filter((route) => route.pattern.test(ctx.path));
    if (onPath.length === 0) return next();
    const route = onPath.find((candidate) => candidate.method === ctx.method);
    if (route === undefined) {
      ctx.set('Allow', onPath.map((candidate) => candidate.method).join(', '));
      ctx.throw(405, `${ctx.method} is not allowed here; allowed: ${onPath.map((r) => r.method).join(', ')}.`);
      return;
    }
    const output = await route.procedure({
      ctx: createContext(ctx.get('authorization') || undefined),
      getRawInput: () => readJsonBody(ctx.req),
      path: route.procedurePath,
      type: route.procedure._def.type,
      signal: undefined,
      batchIndex: 0,
    });
    ctx.status = 200;
    ctx.type = 'application/json';
    ctx.body = stringifyJson(output);
  };
}
