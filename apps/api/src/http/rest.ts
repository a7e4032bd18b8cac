import { stringifyJson } from '@plant-store/schema';
import type { Context, Middleware } from 'koa';
import { getPathParameters, getPathRegExp, normalizePath, type OpenApiMethod } from 'trpc-to-openapi';
import { ApiError, describeIssues, methodNotAllowed } from '../errors.ts';
import type { EventStream } from '../events/hub.ts';
import { type IdempotencyPolicy, parseIdempotencyKey, runWithKey } from '../idempotency.ts';
import { type AnyOperation, authorize, type OperationContext } from '../operation.ts';
import { listOperations } from '../operations/index.ts';
import { readJsonBody } from './body.ts';
import { decodeParams, type ParamDecoders, paramDecoders } from './params.ts';
import type { StoreTracer } from '../tracing/store.ts';
import { requestScope } from './request-scope.ts';
import { serveEventStream } from './sse.ts';

export type RestRoute = {
  method: OpenApiMethod;
  path: string;
  pattern: RegExp;
  operation: AnyOperation;
  /**
   * Whether the input is the JSON body (a POST to a fixed path) or the path and query parameters
   * (any other: a POST to `/…/{id}/action` acts on what its path names, with no body).
   */
  inputFromBody: boolean;
  decoders: ParamDecoders;
};

/**
 * The REST route table: one route per operation of the registry, from its trpc-to-openapi metadata,
 * fixed paths before templated ones (`/plants/events` before `/plants/{id}`).
 */
export function restRoutes(operations = listOperations()): RestRoute[] {
  const params = (path: string) => path.split('{').length;
  const sorted = [...operations].sort(
    (a, b) => params(a.operation.openapi.path) - params(b.operation.openapi.path),
  );
  return sorted.map(({ operation }) => {
    const { method, path } = operation.openapi;
    const inputFromBody = takesBody(method, path);
    return {
      method,
      path: normalizePath(path),
      pattern: getPathRegExp(normalizePath(path)),
      operation,
      inputFromBody,
      decoders: inputFromBody ? new Map() : paramDecoders(operation.input),
    };
  });
}

/**
 * Serves the REST routes with the registry's operations, which the tRPC procedures run too: the same authentication,
 * input schema and `run` as /trpc, without tRPC's per-call machinery (a Fetch Request and several
 * object spreads per call; see "Where the time goes" in bench/README.md). Order of checks: route, token
 * and scope, Idempotency-Key, body or parameters, validation, store. Errors are thrown to the error
 * middleware. A keyed request whose answer is stored gets it again, with `Idempotent-Replayed: true`.
 */
export function restAdapter(
  routes: RestRoute[],
  deps: Pick<OperationContext, 'store' | 'webhooks' | 'events' | 'endpoints'> & {
    heartbeatMs: number;
    idempotency: IdempotencyPolicy;
    storeFor?: StoreTracer | undefined;
  },
): Middleware {
  return async (ctx, next) => {
    let route: RestRoute | undefined;
    let match: RegExpExecArray | null = null;
    const allowed: string[] = [];
    let path: string | undefined;
    // The routes of the first path that matches: fixed paths come first (`restRoutes`).
    for (const candidate of routes) {
      if (path !== undefined && candidate.path !== path) continue;
      const found = candidate.pattern.exec(ctx.path);
      if (found === null) continue;
      path = ctx.state.route = candidate.path;
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
      : decodeParams(route.decoders, { ...ctx.query, ...match?.groups, ...resumeFrom(ctx, route) });
    const parsed = route.operation.input.safeParse(raw);
    if (!parsed.success) {
      const where = route.inputFromBody ? 'request body' : 'request parameters';
      throw new ApiError('bad_request', describeIssues(parsed.error.issues, where));
    }
    const { webhooks, events, endpoints } = deps;
    // With tracing on, the store as this request sees it: its calls are children of its span.
    const store = deps.storeFor?.(request.span) ?? deps.store;
    const context = { store, webhooks, events, endpoints, principal, request };
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
    if (route.operation.stream) return serveEventStream(ctx, output as EventStream, deps.heartbeatMs);
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

/** Whether an operation's input is its JSON body: a POST to a path without parameters. */
export function takesBody(method: string, path: string): boolean {
  return method.toUpperCase() === 'POST' && getPathParameters(normalizePath(path)).length === 0;
}

/**
 * A stream's `Last-Event-ID` header (sent by EventSource when it reconnects) as its `after`
 * parameter, which it overrides: the URL still carries the `after` the stream first started from.
 */
function resumeFrom(ctx: Context, route: RestRoute): { after?: string } {
  const last = ctx.get('last-event-id');
  return route.operation.stream && last !== '' ? { after: last } : {};
}
