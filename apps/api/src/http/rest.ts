import { stringifyJson } from '@plant-store/schema';
import { TRPCError } from '@trpc/server';
import type { Middleware } from 'koa';
import { forEachOpenApiProcedure, getPathRegExp, normalizePath, type OpenApiMethod } from 'trpc-to-openapi';
import type { TokenVerifier } from '../auth.ts';
import { type AnyOperation, authenticate } from '../operation.ts';
import type { AppRouter } from '../router.ts';
import type { PlantStore } from '../store/store.ts';
import { readJsonBody } from './body.ts';

export type RestRoute = {
  method: OpenApiMethod;
  path: string;
  pattern: RegExp;
  operation: AnyOperation;
};

/** The REST route table, read from the procedures' trpc-to-openapi metadata. */
export function restRoutes(router: AppRouter): RestRoute[] {
  const routes: RestRoute[] = [];
  forEachOpenApiProcedure(router._def.procedures, ({ meta }) => {
    const { operation } = meta as { operation?: AnyOperation };
    if (operation === undefined) return;
    const path = normalizePath(meta.openapi.path);
    routes.push({ method: meta.openapi.method, path, pattern: getPathRegExp(path), operation });
  });
  return routes;
}

/**
 * Serves the REST routes with the operations behind the tRPC procedures: the same authentication,
 * input schema and `run` as /trpc, without tRPC's per-call machinery (a Fetch Request and several
 * object spreads per call; see the performance notes in the README). Order of checks: route, auth,
 * body, validation, store. Errors are thrown to the error middleware.
 */
export function restAdapter(
  routes: RestRoute[],
  deps: { store: PlantStore; verifyToken: TokenVerifier },
): Middleware {
  return async (ctx, next) => {
    const onPath = routes.filter((route) => route.pattern.test(ctx.path));
    if (onPath.length === 0) return next();
    const route = onPath.find((candidate) => candidate.method === ctx.method);
    if (route === undefined) {
      const allowed = onPath.map((candidate) => candidate.method).join(', ');
      ctx.set('Allow', allowed);
      ctx.throw(405, `${ctx.method} is not allowed on this path; allowed: ${allowed}.`);
      return;
    }
    const principal = authenticate(deps.verifyToken, ctx.get('authorization') || undefined);
    const parsed = route.operation.input.safeParse(await readJsonBody(ctx.req));
    if (!parsed.success) throw new TRPCError({ code: 'BAD_REQUEST', cause: parsed.error });
    const output = await route.operation.run({ store: deps.store, principal }, parsed.data);
    ctx.status = 200;
    ctx.type = 'application/json';
    ctx.body = stringifyJson(output);
  };
}
