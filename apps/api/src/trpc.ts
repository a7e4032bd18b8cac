import { initTRPC, type TRPC_ERROR_CODE_KEY, TRPCError, tracked } from '@trpc/server';
import { getHTTPStatusCodeFromError } from '@trpc/server/http';
import superjson from 'superjson';
import type { OpenApiMeta } from 'trpc-to-openapi';
import { z } from 'zod';
import type { AuthResult, Principal } from './auth.ts';
import { ApiError, describeIssues, type HttpError, toHttpError } from './errors.ts';
import type { EventHub, EventStream } from './events/hub.ts';
import type { RequestScope } from './heavy-reads.ts';
import {
  DEFAULT_IDEMPOTENCY_POLICY,
  type IdempotencyPolicy,
  parseIdempotencyKey,
  replayedOutput,
  runWithKey,
} from './idempotency.ts';
import { type AnyOperation, authorize, isOperation, type Operation } from './operation.ts';
import { toPlantEvent } from './operations/events.ts';
import type { OperationTree } from './operations/index.ts';
import type { PlantStore } from './store/store.ts';
import type { EndpointSettings } from './webhooks/endpoints.ts';
import type { NewPlantWebhook } from './webhooks/event.ts';

/**
 * What every procedure sees, whichever transport called it. Tests build it directly.
 * @see https://trpc.io/docs/server/context
 */
export type Context = {
  store: PlantStore;
  /** The new-plant webhook's subscribers: what a create enqueues with the plant. */
  webhooks: NewPlantWebhook;
  /** The event streams of this instance. */
  events: EventHub;
  /** Webhook endpoints' settings; without them the endpoint operations answer 503. */
  endpoints?: EndpointSettings;
  /** The request's bearer token, checked once per HTTP request (http/auth.ts). */
  auth: AuthResult;
  /** The HTTP request the call arrived in. */
  request: RequestScope;
  /** How Idempotency-Keys are kept; `DEFAULT_IDEMPOTENCY_POLICY` when omitted. */
  idempotency?: IdempotencyPolicy;
};

// The tRPC boundary: the only module, with http/trpc.ts, that knows TRPCError.

/** How often a subscription with nothing to send sends tRPC's ping event. */
const SUBSCRIPTION_PING_MS = 15_000;

const t = initTRPC
  .context<Context>()
  .meta<OpenApiMeta>()
  .create({
    // superjson carries bigint ids exactly over /trpc.
    transformer: superjson,
    // Never put stack traces in answers, whatever NODE_ENV is.
    isDev: false,
    // Subscriptions (SSE): a ping keeps proxies from closing an idle stream.
    sse: { ping: { enabled: true, intervalMs: SUBSCRIPTION_PING_MS } },
    errorFormatter({ shape, error }) {
      return { ...shape, message: describeTrpcError(error).message };
    },
  });

/** @see https://trpc.io/docs/server/routers */
export const router = t.router;

const CODE_BY_STATUS: Record<number, TRPC_ERROR_CODE_KEY> = {
  400: 'BAD_REQUEST',
  401: 'UNAUTHORIZED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  405: 'METHOD_NOT_SUPPORTED',
  409: 'CONFLICT',
  // tRPC has no 410: the closest, "not found", with the message saying it is no longer kept.
  410: 'NOT_FOUND',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  422: 'UNPROCESSABLE_CONTENT',
  429: 'TOO_MANY_REQUESTS',
  503: 'SERVICE_UNAVAILABLE',
};

/** An `ApiError` as tRPC's error: its status as tRPC's code, itself as the cause. */
export function toTrpcError(error: ApiError): TRPCError {
  const code = CODE_BY_STATUS[error.status] ?? 'INTERNAL_SERVER_ERROR';
  return new TRPCError({ code, message: error.message, cause: error });
}

/**
 * What a tRPC error tells the client, as REST would say it: the `ApiError` behind it, or tRPC's own
 * errors (an input that fails its schema, an unknown procedure); 5xx causes are never shown.
 */
export function describeTrpcError(error: TRPCError): HttpError {
  if (error.cause instanceof ApiError) return toHttpError(error.cause);
  const status = getHTTPStatusCodeFromError(error);
  if (status >= 500) return toHttpError(error);
  const issues = (error.cause as { issues?: { path?: PropertyKey[]; message: string }[] } | undefined)
    ?.issues;
  const invalid = error.code === 'BAD_REQUEST' && Array.isArray(issues) && issues.length > 0;
  return { status, message: invalid ? describeIssues(issues) : error.message, headers: {} };
}

/**
 * An operation's procedure: authorized for the operation's scope, then its input validated, then
 * run. Its metadata is the operation's trpc-to-openapi description.
 * @see https://trpc.io/docs/server/authorization
 */
function withOperation<I extends z.ZodType, O, P extends z.ZodType = I>(
  operation: Operation<I, O>,
  input?: P,
) {
  return t.procedure
    .use(async ({ ctx, next }) => {
      // One middleware, not two: tRPC copies a call's options at every level of its chain. Inside
      // tRPC, an ApiError from authorization or the operation becomes its TRPCError here.
      let principal: Principal;
      try {
        principal = authorize(ctx.auth, operation.scope);
      } catch (error) {
        throw error instanceof ApiError ? toTrpcError(error) : error;
      }
      const result = await next({ ctx: { principal } });
      if (!result.ok && result.error.cause instanceof ApiError) throw toTrpcError(result.error.cause);
      return result;
    })
    .meta({ openapi: operation.openapi })
    .input((input ?? operation.input) as P);
}

/**
 * A mutation. One that accepts an Idempotency-Key takes it from the /trpc request's
 * `Idempotency-Key` header, for a request of one call only (a key names one request); a replay
 * resolves to the stored answer's body.
 */
function toMutation<I extends z.ZodType, O>(operation: Operation<I, O>) {
  return withOperation(operation).mutation(async ({ ctx, input }) => {
    const header = ctx.request.idempotencyKey;
    if (!operation.idempotencyKey || header === undefined) return operation.run(ctx, input as z.output<I>);
    if (ctx.request.calls !== 1) {
      throw new ApiError(
        'bad_request',
        'An Idempotency-Key names one call: send a keyed call in a request of its own.',
      );
    }
    const key = parseIdempotencyKey(header);
    const policy = ctx.idempotency ?? DEFAULT_IDEMPOTENCY_POLICY;
    const result = await runWithKey(operation as AnyOperation, ctx, input, key, policy);
    if (!('replay' in result)) return result.output as O;
    ctx.request.markReplayed?.();
    return replayedOutput(result.replay) as O;
  });
}

function toQuery<I extends z.ZodType, O>(operation: Operation<I, O>) {
  return withOperation(operation).query(({ ctx, input }) => operation.run(ctx, input as z.output<I>));
}

/**
 * A stream as a tRPC subscription over SSE: each event `tracked()` with its id, so that
 * `httpSubscriptionLink` resumes with `lastEventId` after a reconnection. A stream the hub cuts
 * (a consumer too slow, a shutdown) cuts the connection rather than completing the subscription,
 * so the client reconnects (to another instance, after a shutdown) and resumes. A revoked token's
 * ends with UNAUTHORIZED, which the client does not retry.
 */
function toSubscription<S extends z.ZodRawShape>(operation: Operation<z.ZodObject<S>, EventStream>) {
  const input = operation.input.extend({
    lastEventId: z
      .string()
      .regex(/^[0-9]{1,19}$/)
      .nullish(),
  });
  return withOperation(operation, input).subscription(async function* ({ ctx, input }) {
    const { lastEventId, ...rest } = input as { lastEventId?: string | null };
    const resume = lastEventId ? { ...rest, after: BigInt(lastEventId) } : rest;
    // Thrown inside the generator, after the middleware has run: an ApiError (410, 429, 503) would reach
    // the client as INTERNAL_SERVER_ERROR, which httpSubscriptionLink retries forever.
    const stream = await operation.run(ctx, resume as z.output<z.ZodObject<S>>).catch((error: unknown) => {
      throw error instanceof ApiError ? toTrpcError(error) : error;
    });
    for await (const event of stream) yield tracked(String(event.id), toPlantEvent(event));
    const ended = await stream.ended;
    if (ended === 'revoked')
      throw toTrpcError(new ApiError('invalid_token', 'The bearer token was revoked.'));
    if (ended !== 'closed') ctx.request.abort();
  });
}

/**
 * The procedures of a tree of operations: a subscription for a stream, a query for each other GET
 * operation, a mutation for the rest.
 */
export type ProceduresOf<T> = {
  [K in keyof T]: T[K] extends Operation<infer I, infer O, infer M>
    ? O extends EventStream
      ? I extends z.ZodObject<infer S>
        ? ReturnType<typeof toSubscription<S>>
        : never
      : M extends 'GET'
        ? ReturnType<typeof toQuery<I, O>>
        : ReturnType<typeof toMutation<I, O>>
    : ProceduresOf<T[K]>;
};

export function proceduresOf<T extends OperationTree>(tree: T): ProceduresOf<T> {
  const procedures: Record<string, unknown> = {};
  for (const [name, node] of Object.entries(tree)) {
    procedures[name] = !isOperation(node)
      ? proceduresOf(node)
      : node.stream
        ? toSubscription(node as Operation<z.ZodObject, EventStream>)
        : node.openapi.method === 'GET'
          ? toQuery(node)
          : toMutation(node);
  }
  return procedures as ProceduresOf<T>;
}
