import { parseJson } from '@plant-store/schema';
import type { Context, Middleware } from 'koa';
import { getPathRegExp, normalizePath, type OpenApiMethod } from 'trpc-to-openapi';
import type { z } from 'zod';
import { EXPECTED_VERSION, etagOf, noneMatchFails } from '../operations/conditions.ts';
import { describeIssues, methodNotAllowed, RequestError } from '../errors.ts';
import type { EventStream } from '../events/hub.ts';
import { replayedOutput } from '../operations/idempotency.ts';
import {
  type AnyOperation,
  type RequestContext,
  type RequestScope,
  takesBody,
} from '../operations/operation.ts';
import { listOperations } from '../operations/registry.ts';
import { runOperation } from '../operations/pipeline.ts';
import { readJsonBody } from './body.ts';
import { decodeParams, type ParamDecoders, paramDecoders } from './params.ts';
import { requestScope } from './request-scope.ts';
import { SSE_FORMAT, serveEventStream } from './sse.ts';
import { writeJson } from './json-writer.ts';

/** The request's context from its token check and the request (app.ts builds it, for both transports). */
export type CreateContext = (auth: RequestContext['auth'], request: RequestScope) => RequestContext;

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
    const inputFromBody = takesBody(operation);
    return {
      method,
      path: normalizePath(path),
      pattern: getPathRegExp(normalizePath(path)),
      operation,
      inputFromBody,
      decoders: inputFromBody && operation.body === undefined ? new Map() : restParamDecoders(operation),
    };
  });
}

/** An operation's REST parameters: its input's, without `expectedVersion` (REST sends `If-Match`). */
function restParamDecoders(operation: AnyOperation): ParamDecoders {
  const decoders = new Map(paramDecoders(operation.input));
  decoders.delete(EXPECTED_VERSION);
  return decoders;
}

/**
 * Serves the REST routes with the registry's operations through the one pipeline (pipeline.ts) the
 * tRPC procedures use too, without tRPC's per-call machinery (a Fetch Request and several object
 * spreads per call; see "Where the time goes" in bench/README.md): route (404, 405), then
 * `runOperation`, whose `readInput` reads the body or decodes the path and query parameters.
 * Errors are thrown to the error middleware. A keyed request whose answer is stored gets it again,
 * with `Idempotent-Replayed: true`.
 */
export function restAdapter(
  routes: RestRoute[],
  createContext: CreateContext,
  options: { heartbeatMs: number },
): Middleware {
  const paths = routesByPath(routes);
  return async (ctx, next) => {
    // The first path that matches: fixed paths come first (`restRoutes`).
    const requestPath = ctx.path;
    let path: (typeof paths)[number] | undefined;
    let match: RegExpExecArray | null = null;
    for (const candidate of paths) {
      match = candidate.pattern.exec(requestPath);
      if (match !== null) {
        path = candidate;
        break;
      }
    }
    if (path === undefined) return next();
    ctx.state.route = path.path;
    // HEAD wherever GET is served (RFC 9110 §9.3.2): run as GET; Koa sends no body to a HEAD.
    const route = path.byMethod.get(ctx.method === 'HEAD' ? 'GET' : ctx.method);
    if (route === undefined) throw methodNotAllowed(ctx.method, path.allowed);
    const { operation } = route;
    const request = restScope(ctx);
    const readInput = () =>
      operation.body !== undefined
        ? readPatch(ctx, route, operation.body, match?.groups ?? {})
        : route.inputFromBody
          ? readJsonBody(ctx.req)
          : decodeParams(
              route.decoders,
              ctx.querystring === '' ? undefined : ctx.query,
              match?.groups,
              resumeFrom(ctx, route),
            );
    const result = await runOperation(
      operation,
      createContext(ctx.state.auth, request),
      readInput,
      request.idempotencyKey,
    );
    if ('replay' in result) {
      ctx.status = result.replay.status;
      // The headers the first answer had that come from the request (a create's Content-Location).
      const again = operation.rest?.present?.(replayedOutput(result.replay), {
        path: ctx.path,
        input: result.input,
      });
      if (again?.headers) ctx.set(again.headers);
      if (result.replay.body !== null) {
        ctx.type = 'application/json';
        ctx.body = result.replay.body;
      }
      // A replayed create or update carries its ETag again, as the first answer did (an update's
      // stored before the version was kept with the answer: the version in its body).
      const version =
        result.replay.version ??
        (parseJson(result.replay.body ?? 'null') as { version?: unknown } | null)?.version;
      if (typeof version === 'bigint') request.setVersion?.(version);
      return;
    }
    if (operation.stream) {
      const stream = result.output as EventStream;
      if (ctx.method === 'HEAD') return answerStreamHead(ctx, stream);
      return serveEventStream(ctx, stream, SSE_FORMAT, options.heartbeatMs);
    }
    const { rest } = operation;
    const presented = rest?.present
      ? rest.present(result.output, { path: ctx.path, input: result.input })
      : { body: result.output };
    ctx.status = rest?.status ?? 200;
    if (presented.headers) ctx.set(presented.headers);
    // Only an answer with an ETag can be "not modified" (Koa answers `undefined` for a header not set).
    const ifNoneMatch = ctx.get('if-none-match');
    const etag = ctx.response.get('etag') as string | undefined;
    if (route.method === 'GET' && ifNoneMatch !== '' && etag && noneMatchFails(ifNoneMatch, etag)) {
      ctx.status = 304;
      return;
    }
    if (presented.body !== undefined) {
      ctx.type = 'application/json';
      ctx.body = writeJson(presented.body);
    }
  };
}

/** The routes grouped by path, in the table's order, each path's by method, with its `Allow` list. */
function routesByPath(routes: RestRoute[]) {
  const paths: { path: string; pattern: RegExp; byMethod: Map<string, RestRoute>; allowed: string[] }[] = [];
  for (const route of routes) {
    let path = paths.find((candidate) => candidate.path === route.path);
    if (path === undefined) {
      path = { path: route.path, pattern: route.pattern, byMethod: new Map(), allowed: [] };
      paths.push(path);
    }
    path.byMethod.set(route.method, route);
    path.allowed.push(route.method);
    if (route.method === 'GET') path.allowed.push('HEAD');
  }
  return paths;
}

/**
 * HEAD on a stream: what GET would answer (its checks have passed: the token, the parameters, where
 * it resumes, the stream limits) with the stream's headers and no body. The stream is closed at once,
 * so a HEAD holds no slot.
 */
function answerStreamHead(ctx: Context, stream: EventStream): void {
  stream.close();
  ctx.status = 200;
  ctx.set({ 'Cache-Control': 'no-cache', 'X-Accel-Buffering': 'no' });
  ctx.type = 'text/event-stream; charset=utf-8';
}

/** A REST call's request scope: with its `If-Match` header, and the answer's `ETag` for a plant's version. */
function restScope(ctx: Context): RequestScope {
  const scope = requestScope(ctx, 1);
  const ifMatch = ctx.req.headers['if-match'];
  if (ifMatch !== undefined) scope.ifMatch = ifMatch;
  scope.setVersion = (version) => ctx.res.setHeader('ETag', etagOf(version));
  return scope;
}

/** The media types a PATCH body may be sent as: a JSON Merge Patch (RFC 7396), or plain JSON. */
const PATCH_MEDIA_TYPES = ['application/merge-patch+json', 'application/json'];

/**
 * The input of an operation whose input is its path parameters plus a body: the body, validated
 * against `body` (400 "Invalid request body: …"), with the path's parameters, which a body member
 * of the same name must equal (400 otherwise).
 */
async function readPatch(
  ctx: Context,
  route: RestRoute,
  body: z.ZodType,
  groups: Record<string, string>,
): Promise<Record<string, unknown>> {
  const params = decodeParams(route.decoders, groups);
  const parsed = body.safeParse(await readJsonBody(ctx.req, PATCH_MEDIA_TYPES));
  if (!parsed.success) {
    throw new RequestError('bad_request', describeIssues(parsed.error.issues), { cause: parsed.error });
  }
  const members = parsed.data as Record<string, unknown>;
  for (const [name, value] of Object.entries(params)) {
    if (members[name] !== undefined && members[name] !== value) {
      throw new RequestError(
        'bad_request',
        `Invalid request body: ${name} must be the path's (${String(value)}) when sent.`,
      );
    }
  }
  return { ...members, ...params };
}

/**
 * A stream's `Last-Event-ID` header (sent by EventSource when it reconnects) as its `after`
 * parameter, which it overrides: the URL still carries the `after` the stream first started from.
 */
function resumeFrom(ctx: Context, route: RestRoute): { after?: string } | undefined {
  const last = route.operation.stream ? ctx.get('last-event-id') : '';
  return last === '' ? undefined : { after: last };
}
