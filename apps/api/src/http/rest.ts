import { stringifyJson } from '@plant-store/schema';
import type { Middleware } from 'koa';
import { getPathRegExp, normalizePath, type OpenApiMethod } from 'trpc-to-openapi';
import { ApiError, describeIssues, methodNotAllowed } from '../errors.ts';
import { type IdempotencyPolicy, parseIdempotencyKey, runWithKey } from '../idempotency.ts';
import { type AnyOperation, authorize, type OperationContext } from '../operation.ts';
import { listOperations } from '../operations/index.ts';
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

/** The REST route table: one route per operation of the registry, from its trpc-to-openapi metadata. */
export function restRoutes(operations = listOperations()): RestRoute[] {
  return operations.map(({ operation }) => {
    const { method, path } = operation.openapi;
    const inputFromBody = method === 'POST';
    return {
      method,
      path: normalizePath(path),
      pattern: getPathRegExp(normalizePath(path)),
      operation,
      inputFromBody,
      decoders: inputFromBody ? {} : paramDecoders(operation.input),
    };
  });
}

/**
 * Serves the REST routes with the registry's operations, which the tRPC procedures run too: the same authentication,
 * input schema and `run` as /trpc, without tRPC's per-call machinery (a Fetch Request and several
 * object spreads per call; see the performance notes in the README). Order of checks: route, token
 * and scope, Idempotency-Key, body or parameters, validation, store. Errors are thrown to the error
 * middleware. A keyed request whose answer is stored gets it again, with `Idempotent-Replayed: true`.
 */
export function restAdapter(
  routes: RestRoute[],
  deps: Pick<OperationContext, 'store' | 'webhooks'> & { idempotency: IdempotencyPolicy },
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
    if (route === undefined) throw methodNotAllowed(ctx.method, allowed);
    const principal = authorize(ctx.state.auth, route.operation.scope);
    const request = requestScope(ctx, 1);
    const key =
      route.operation.idempotencyKey && request.idempotencyKey !== undefined
        ? parseIdempotencyKey(request.idempotencyKey)
        : undefined;
    const raw = route.inputFromBody
      ? await readJsonBody(ctx.req)
      : decodeParams(route.decoders, { ...ctx.query, ...match?.groups });
    const parsed = route.operation.input.safeParse(raw);
    if (!parsed.success) {
      const where = route.inputFromBody ? 'request body' : 'request parameters';
      throw new ApiError('bad_request', describeIssues(parsed.error.issues, where));
    }
    const context = { store: deps.store, webhooks: deps.webhooks, principal, request };
    let output: unknown;
    if (key === undefined) output = await route.operation.run(context, parsed.data);
    else {
      const result = await runWithKey(route.operation, context, parsed.data, key, deps.idempotency);
      if ('replay' in result) {
        ctx.status = result.replay.status;
        request.markReplayed?.();
        if (result.replay.body !== null) {
          ctx.type = 'application/json';
          ctx.body = result.replay.body;
        }
        return;
      }
      output = result.output;
    }
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
