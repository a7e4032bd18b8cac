import {
  callTRPCProcedure,
  getTRPCErrorFromUnknown,
  getTRPCErrorShape,
  TRPCError,
  transformTRPCResponse,
} from '@trpc/server';
import { nodeHTTPRequestHandler } from '@trpc/server/adapters/node-http';
import { getHTTPStatusCode } from '@trpc/server/http';
import type { Context as KoaContext, Middleware } from 'koa';
import type { Logger } from 'pino';
import getRawBody from 'raw-body';
import type { AuthResult } from '../auth.ts';
import { ApiError } from '../errors.ts';
import type { RequestScope } from '../heavy-reads.ts';
import { listOperations } from '../operations/index.ts';
import type { AppRouter } from '../router.ts';
import { type Context, describeTrpcError, toTrpcError } from '../trpc.ts';
import { BODY_LIMIT_BYTES } from './body.ts';
import { logFailure } from './errors.ts';
import { requestScope } from './request-scope.ts';

const PREFIX = '/trpc/';

/** Most calls one /trpc request may carry; a larger batch is refused (413) before any call runs. */
export const MAX_BATCH_CALLS = 100;

type CreateContext = (auth: AuthResult, request: RequestScope) => Context;

/**
 * Serves the tRPC wire protocol under /trpc. Plain JSON mutations — what `httpLink` and
 * `httpBatchLink` send — take a direct path: read the body, call each procedure, write the
 * answer. tRPC's own node-http handler builds a Fetch Request and Response per call, which
 * measured 4x slower; it still serves everything else (queries, streaming, subscriptions,
 * unknown procedures), so the protocol stays tRPC's.
 */
export function trpcAdapter(router: AppRouter, createContext: CreateContext, log: Logger): Middleware {
  const config = router._def._config;
  // Every procedure is an operation of the registry, at the same path: a mutation unless it is a GET.
  const mutation = new Map(
    listOperations().map(({ path, operation }) => [path, operation.openapi.method !== 'GET']),
  );

  return async (ctx, next) => {
    if (!ctx.path.startsWith(PREFIX)) return next();
    const paths = safeDecode(ctx.path.slice(PREFIX.length))?.split(',') ?? [];
    ctx.state.route = routeOf(paths, mutation);
    if (paths.length > MAX_BATCH_CALLS) {
      const error = toTrpcError(
        new ApiError(
          'too_large',
          `A batch may hold at most ${MAX_BATCH_CALLS} calls; this one holds ${paths.length}.`,
        ),
      );
      // One error for the whole request, which @trpc/client hands to every call of the batch.
      const item = {
        error: getTRPCErrorShape({
          config,
          error,
          type: 'unknown',
          path: undefined,
          input: undefined,
          ctx: undefined,
        }),
      };
      return answer(ctx, false, [item], [error]);
    }
    const batch = ctx.querystring === 'batch=1';
    const direct =
      paths.length > 0 &&
      ctx.method === 'POST' &&
      (batch || paths.length === 1) &&
      ctx.get('content-type').split(';')[0] === 'application/json' &&
      ctx.get('trpc-accept') === '' &&
      paths.every((path) => mutation.get(path) === true);
    const request = requestScope(ctx, paths.length);
    if (!direct) return viaTrpcHandler(ctx, router, () => createContext(ctx.state.auth, request), log);

    const context = createContext(ctx.state.auth, request);
    let inputs: unknown[];
    try {
      const text = await getRawBody(ctx.req, {
        length: ctx.get('content-length') || undefined,
        limit: BODY_LIMIT_BYTES,
        encoding: 'utf-8',
      });
      const raw: unknown = text === '' ? undefined : JSON.parse(text);
      inputs = batch ? paths.map((_, i) => (raw as Record<string, unknown> | undefined)?.[i]) : [raw];
    } catch (cause) {
      const tooLarge = (cause as { type?: string }).type === 'entity.too.large';
      const error = tooLarge
        ? toTrpcError(new ApiError('too_large', `The request body is larger than ${BODY_LIMIT_BYTES} bytes.`))
        : new TRPCError({ code: 'PARSE_ERROR', message: 'The body is not JSON.', cause });
      return answer(
        ctx,
        batch,
        paths.map(() => errorItem(error, undefined)),
        [error],
      );
    }

    const errors: (TRPCError | null)[] = [];
    const items = await Promise.all(
      paths.map(async (path, i) => {
        let input: unknown;
        try {
          input = inputs[i] === undefined ? undefined : deserialize(inputs[i]);
          const data = await callTRPCProcedure({
            router,
            ctx: context,
            getRawInput: async () => input,
            path,
            type: 'mutation',
            signal: undefined,
            batchIndex: i,
          });
          errors[i] = null;
          return { result: { data } };
        } catch (cause) {
          const error = getTRPCErrorFromUnknown(cause);
          errors[i] = error;
          logTrpcFailure(ctx.state.log ?? log, error, ctx.state.requestId, path);
          return errorItem(error, path, input, context);
        }
      }),
    );
    answer(ctx, batch, items, errors);
  };

  /** An input's superjson, revived: a 400 when it cannot be, as tRPC's own handler answers. */
  function deserialize(input: unknown): unknown {
    try {
      return config.transformer.input.deserialize(input);
    } catch (cause) {
      const message = cause instanceof Error ? cause.message : 'Invalid input';
      throw new TRPCError({ code: 'BAD_REQUEST', message, cause });
    }
  }

  function errorItem(error: TRPCError, path: string | undefined, input?: unknown, ctx?: Context) {
    return { error: getTRPCErrorShape({ config, error, type: 'mutation', path, input, ctx }) };
  }

  function answer(ctx: KoaContext, batch: boolean, items: object[], errors: (TRPCError | null)[]): void {
    const body = batch ? items : items[0]!;
    ctx.status = getHTTPStatusCode(body as never, errors as TRPCError[]);
    ctx.set(errorHeaders(errors));
    ctx.type = 'application/json';
    ctx.body = JSON.stringify(transformTRPCResponse(config, body as never));
  }
}

/**
 * The route a /trpc request is counted and logged under, from a closed set whatever it names:
 * `/trpc/<procedure>` for one call of a known procedure, `/trpc (batch)` for several calls of known
 * ones (naming their combinations let 765 requests grow /metrics by 12,256 lines), `/trpc` when any
 * is unknown. One label per request, as for REST: the status counted is the request's.
 */
function routeOf(paths: readonly string[], known: ReadonlyMap<string, boolean>): string {
  if (paths.length === 0 || !paths.every((path) => known.has(path))) return '/trpc';
  return paths.length === 1 ? `/trpc/${paths[0]}` : '/trpc (batch)';
}

function safeDecode(text: string): string | undefined {
  try {
    return decodeURIComponent(text);
  } catch {
    return undefined;
  }
}

/**
 * The headers REST would send with these errors, over /trpc too: RFC 6750's challenge with a 401,
 * `Retry-After` with a busy 503.
 */
function errorHeaders(errors: readonly (TRPCError | null | undefined)[]): Record<string, string> {
  return Object.assign({}, ...errors.map((error) => (error ? describeTrpcError(error).headers : undefined)));
}

/** Logs a failed call as REST logs a failed request: the `ApiError` behind it, or any 5xx. */
function logTrpcFailure(log: Logger, error: TRPCError, reqId: unknown, path: string | undefined): void {
  if (error.cause instanceof ApiError) logFailure(log, error.cause, reqId, path);
  else if (describeTrpcError(error).status >= 500) logFailure(log, error.cause ?? error, reqId, path);
}

async function viaTrpcHandler(
  ctx: KoaContext,
  router: AppRouter,
  createContext: () => Context,
  log: Logger,
): Promise<void> {
  // Koa presets 404 and tRPC only overwrites non-200 statuses: hand it the raw response.
  ctx.respond = false;
  ctx.res.statusCode = 200;
  await nodeHTTPRequestHandler({
    router,
    req: ctx.req,
    res: ctx.res,
    path: ctx.path.slice(PREFIX.length),
    maxBodySize: BODY_LIMIT_BYTES,
    createContext,
    responseMeta: ({ errors }) => ({ headers: errorHeaders(errors) }),
    onError: ({ error, path }) => logTrpcFailure(ctx.state.log ?? log, error, ctx.state.requestId, path),
  });
}
