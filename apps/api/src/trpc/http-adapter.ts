import { TRPCError } from '@trpc/server';
import { nodeHTTPRequestHandler } from '@trpc/server/adapters/node-http';
import type { Context as KoaContext, Middleware } from 'koa';
import type { Logger } from 'pino';
import { RequestError } from '../errors.ts';
import { replayedOutput } from '../operations/idempotency.ts';
import type { AnyOperation } from '../operations/operation.ts';
import { listOperations } from '../operations/registry.ts';
import { runOperation } from '../operations/pipeline.ts';
import { appRouter } from './router.ts';
import { onlySubscriptionParams, serveSubscription, subscriptionFormat } from './subscription.ts';
import { type Context, describeTrpcError, transformer, unreadableInput } from './procedures.ts';
import { BODY_LIMIT_BYTES, NOT_JSON, readBodyText } from '../http/body.ts';
import { logFailure } from '../http/error-middleware.ts';
import { type OwnPaths, ownPaths } from '../http/own-paths.ts';
import { requestScope } from '../http/request-scope.ts';
import type { CreateContext } from '../http/rest.ts';
import {
  answerTrpc,
  errorHeaders,
  TRPC_PREFIX,
  type TrpcOutcome,
  trpcFailure,
  trpcResult,
} from './answer.ts';

/** Most calls one /trpc request may carry; a larger batch is refused (413) before any call runs. */
export const MAX_BATCH_CALLS = 100;

/**
 * Serves the tRPC wire protocol under /trpc. Plain JSON mutations — what `httpLink` and
 * `httpBatchLink` send — take a direct path: each call goes through the pipeline (pipeline.ts, as
 * the procedures' own resolvers and REST do), its input read from the body once it is authorized,
 * and the answer is written in tRPC's format (answer.ts). tRPC's own node-http handler builds
 * a Fetch Request and Response per call and runs each procedure's middleware chain (see
 * docs/architecture.md for what that costs). Subscriptions take a direct path too
 * (subscription.ts). tRPC's handler still serves everything else (queries, streaming, unknown
 * procedures, and any request with a `trpc-accept` header), so the protocol stays tRPC's.
 */
export function trpcPaths(createContext: CreateContext, log: Logger): OwnPaths {
  const operations = new Map(listOperations().map(({ path, operation }) => [path, operation]));
  // Every procedure is an operation of the registry, at the same path: a mutation unless it is a GET.
  const mutations = new Map([...operations].filter(([, operation]) => operation.openapi.method !== 'GET'));
  const subscriptions = new Map(
    [...operations]
      .filter(([, operation]) => operation.stream)
      .map(([path, operation]) => [path, { path, operation, format: subscriptionFormat(path) }]),
  );

  const serve: Middleware = async (ctx) => {
    const paths = safeDecode(ctx.path.slice(TRPC_PREFIX.length))?.split(',') ?? [];
    ctx.state.route = routeOf(paths, operations);
    if (paths.length > MAX_BATCH_CALLS) {
      // Thrown to the error middleware, which answers it in tRPC's shape, once for the request.
      throw new RequestError(
        'too_large',
        `A batch may hold at most ${MAX_BATCH_CALLS} calls; this one holds ${paths.length}.`,
      );
    }
    const batch = ctx.querystring === 'batch=1';
    const direct =
      paths.length > 0 &&
      ctx.method === 'POST' &&
      (batch || paths.length === 1) &&
      ctx.get('content-type').split(';')[0] === 'application/json' &&
      ctx.get('trpc-accept') === '' &&
      paths.every((path) => mutations.has(path));
    const request = requestScope(ctx, paths.length);
    const context = createContext(ctx.state.auth, request);
    const subscription =
      ctx.method === 'GET' && paths.length === 1 && ctx.get('trpc-accept') === ''
        ? subscriptions.get(paths[0]!)
        : undefined;
    if (subscription !== undefined && onlySubscriptionParams(ctx.querystring)) {
      return serveSubscription(ctx, subscription, context, (error) =>
        logTrpcFailure(ctx.state.log ?? log, error, ctx.state.requestId, subscription.path),
      );
    }
    if (!direct) return viaTrpcHandler(ctx, () => context, log);

    // The body holds every call's input: read once, by the first call that gets that far.
    let body: Promise<unknown> | undefined;
    const inputOf = async (i: number) => {
      body ??= readBodyText(ctx.req).then(parseBody);
      const raw = await body;
      // As tRPC's handler: a batch's body is an object of the calls' inputs by index.
      if (batch && raw !== undefined && (typeof raw !== 'object' || raw === null || Array.isArray(raw))) {
        throw unreadableInput('request body', undefined);
      }
      const input = batch ? (raw as Record<number, unknown> | undefined)?.[i] : raw;
      return input === undefined ? undefined : deserialize(input);
    };
    const outcomes = await Promise.all(
      paths.map(async (path, i): Promise<TrpcOutcome> => {
        try {
          const operation = mutations.get(path) as AnyOperation;
          const result = await runOperation(operation, context, () => inputOf(i), request.idempotencyKey);
          return trpcResult('replay' in result ? replayedOutput(result.replay) : result.output);
        } catch (thrown) {
          const outcome = trpcFailure(thrown, path);
          logTrpcFailure(ctx.state.log ?? log, outcome.error!, ctx.state.requestId, path);
          return outcome;
        }
      }),
    );
    answerTrpc(ctx, batch, outcomes);
  };
  return ownPaths((path) => path.startsWith(TRPC_PREFIX), serve);
}

/** The body's JSON, or tRPC's parse error (what its own handler answers to a body it cannot parse). */
function parseBody(text: string): unknown {
  try {
    return text === '' ? undefined : JSON.parse(text);
  } catch (cause) {
    throw new TRPCError({ code: 'PARSE_ERROR', message: NOT_JSON, cause });
  }
}

/** An input's superjson, revived: a 400 when it cannot be, as tRPC's own handler answers (trpc.ts). */
function deserialize(input: unknown): unknown {
  try {
    return transformer.deserialize(input as never);
  } catch (cause) {
    throw unreadableInput('request body', cause);
  }
}

/**
 * The route a /trpc request is counted and logged under, from a closed set whatever it names:
 * `/trpc/<procedure>` for one call of a known procedure, `/trpc (batch)` for several calls of known
 * ones (naming their combinations let 765 requests grow /metrics by 12,256 lines), `/trpc` when any
 * is unknown. One label per request, as for REST: the status counted is the request's.
 */
function routeOf(paths: readonly string[], known: ReadonlyMap<string, unknown>): string {
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

/** Logs a failed call as REST logs a failed request: the `RequestError` behind it, or any 5xx. */
function logTrpcFailure(log: Logger, error: TRPCError, reqId: unknown, path: string | undefined): void {
  if (error.cause instanceof RequestError) logFailure(log, error.cause, reqId, path);
  else if (describeTrpcError(error).status >= 500) logFailure(log, error.cause ?? error, reqId, path);
}

async function viaTrpcHandler(ctx: KoaContext, createContext: () => Context, log: Logger): Promise<void> {
  // Koa presets 404 and tRPC only overwrites non-200 statuses: hand it the raw response.
  ctx.respond = false;
  ctx.res.statusCode = 200;
  await nodeHTTPRequestHandler({
    router: appRouter,
    req: ctx.req,
    res: ctx.res,
    path: ctx.path.slice(TRPC_PREFIX.length),
    maxBodySize: BODY_LIMIT_BYTES,
    createContext,
    responseMeta: ({ errors }) => ({ headers: errorHeaders(errors) }),
    onError: ({ error, path }) => logTrpcFailure(ctx.state.log ?? log, error, ctx.state.requestId, path),
  });
}
