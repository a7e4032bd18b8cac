import { stringifyJson } from '@plant-store/schema';
import { TRPCError } from '@trpc/server';
import type { Middleware } from 'koa';
import { forEachOpenApiProcedure, getPathRegExp, normalizePath, type OpenApiMethod } from 'trpc-to-openapi';
import { describeIssues } from '../errors.ts';
import { type AnyOperation, authorize, type OperationContext } from '../operation.ts';
import type { AppRouter } from '../router.ts';
import { readJsonBody } from './body.ts';
import { decodeParams, paramDecoders } from './params.ts';
import { requestScope } from './request-scope.ts';

export type RestRoute = {
  method: OpenApiMethod;
  path: string;
  pattern: RegExp;
  operation: AnyOperation;
  /** Whether the input is the JSON body (POST) or the path and query parameters. */
  inputFromBody: boolean;
  decoders: ReturnType<typeof paramDecoders>;
};

/** The REST route table, read from the procedures' trpc-to-openapi metadata. */
export function restRoutes(router: AppRouter): RestRoute[] {
  const routes: RestRoute[] = [];
  forEachOpenApiProcedure(router._def.procedures, ({ meta }) => {
    const { operation } = meta as { operation?: AnyOperation };
    if (operation === undefined) return;
    const path = normalizePath(meta.openapi.path);
    const inputFromBody = meta.openapi.method === 'POST';
    routes.push({
      method: meta.openapi.method,
      path,
      pattern: getPathRegExp(path),
      operation,
      inputFromBody,
      decoders: inputFromBody ? {} : paramDecoders(operation.input),
    });
  });
  return routes;
}

/**
 * Serves the REST routes with the operations behind the tRPC procedures: the same authentication,
 * input schema and `run` as /trpc, without tRPC's per-call machinery (a Fetch Request and several
 * object spreads per call; see the performance notes in the README). Order of checks: route, token
 * and scope, body or parameters, validation, store. Errors are thrown to the error middleware.
 */
export function restAdapter(
  routes: RestRoute[],
  deps: Pick<OperationContext, 'store' | 'webhooks'>,
): Middleware {
  return async (ctx, next) => {
    let route: RestRoute | undefined;
    let match: RegExpExecArray | null = null;
    const allowed: string[] = [];
    for (const candidate of routes) {
      const found = candidate.pattern.exec(ctx.path);
      if (found === null) continue;
      ctx.state.route = candidate.path;
      allowed.push(candidate.method);
      if (candidate.method === ctx.method) {
        route = candidate;
        match = found;
      }
    }
    if (allowed.length === 0) return next();
    if (route === undefined) {
      ctx.set('Allow', allowed.join(', '));
      ctx.throw(405, `${ctx.method} is not allowed on this path; allowed: ${allowed.join(', ')}.`);
      return;
    }
    const principal = authorize(ctx.state.auth, route.operation.scope);
    const raw = route.inputFromBody
      ? await readJsonBody(ctx.req)
      : decodeParams(route.decoders, { ...ctx.query, ...match?.groups });
    const parsed = route.operation.input.safeParse(raw);
    if (!parsed.success) {
      const where = route.inputFromBody ? 'request body' : 'request parameters';
      throw new TRPCError({ code: 'BAD_REQUEST', message: describeIssues(parsed.error.issues, where) });
    }
    const output = await route.operation.run(
      { store: deps.store, webhooks: deps.webhooks, principal, request: requestScope(ctx, 1) },
      parsed.data,
    );
    const { rest } = route.operation;
    const presented = rest?.present
      ? rest.present(output, { path: ctx.path, input: parsed.data })
      : { body: output };
    ctx.status = rest?.status ?? 200;
    if (presented.headers) ctx.set(presented.headers);
    if (presented.body !== undefined) {
      ctx.type = 'application/json';
      ctx.body = stringifyJson(presented.body);
    }
  };
}
