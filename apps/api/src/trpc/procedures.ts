import { initTRPC, type TRPC_ERROR_CODE_KEY, TRPCError, tracked } from '@trpc/server';
import { getHTTPStatusCodeFromError } from '@trpc/server/http';
import { TRPC_ERROR_CODES_BY_KEY } from '@trpc/server/rpc';
import superjson from 'superjson';
import { z } from 'zod';
import { describeIssues, type HttpError, RequestError, toHttpError } from '../errors.ts';
import { type EventStream, OVERFLOW_GRACE_MS, OVERFLOW_MESSAGE } from '../events/event-stream.ts';
import { replayedOutput } from '../operations/idempotency.ts';
import {
  type AnyOperation,
  authorize,
  isOperation,
  type Operation,
  type RequestContext,
} from '../operations/operation.ts';
import { toPlantEvent } from '../operations/events.ts';
import type { OperationTree } from '../operations/registry.ts';
import { runOperation } from '../operations/pipeline.ts';

/**
 * What every procedure sees, whichever transport called it: the request's context. Tests build it
 * directly.
 * @see https://trpc.io/docs/server/context
 */
export type Context = RequestContext;

// The tRPC boundary: with trpc/http-adapter.ts and trpc/subscription.ts, the only modules that
// know TRPCError.

/** How often a subscription with nothing to send sends tRPC's ping event. */
export const SUBSCRIPTION_PING_MS = 15_000;

/** Serializes inputs and outputs over /trpc: superjson carries bigint ids exactly. */
export const transformer = superjson;

/**
 * What tRPC writes is serialized once per object: every subscription yields the same event object
 * for an event (`toPlantEvent`), so superjson walks it once however many streams carry it.
 */
const serialized = new WeakMap<object, ReturnType<typeof superjson.serialize>>();
const serializeOnce = (value: unknown) => {
  if (typeof value !== 'object' || value === null) return superjson.serialize(value as never);
  let done = serialized.get(value);
  if (done === undefined) {
    done = superjson.serialize(value as never);
    serialized.set(value, done);
  }
  return done;
};

const t = initTRPC.context<Context>().create({
  transformer: { input: superjson, output: { serialize: serializeOnce, deserialize: superjson.deserialize } },
  // Never put stack traces in answers, whatever NODE_ENV is.
  isDev: false,
  // Subscriptions (SSE): a ping keeps proxies from closing an idle stream.
  sse: { ping: { enabled: true, intervalMs: SUBSCRIPTION_PING_MS } },
  errorFormatter: ({ error, path }) => trpcErrorShape(error, path),
});

/**
 * An error as tRPC's wire protocol carries it (tRPC's default shape), with the message REST would
 * give: the error formatter of every procedure, and what trpc/http-adapter.ts writes itself, so both ways
 * of answering /trpc say the same.
 * @see https://trpc.io/docs/server/error-formatting
 */
export function trpcErrorShape(error: TRPCError, path: string | undefined) {
  return {
    message: describeTrpcError(error).message,
    code: TRPC_ERROR_CODES_BY_KEY[error.code],
    data: {
      code: error.code,
      httpStatus: getHTTPStatusCodeFromError(error),
      ...(path !== undefined && { path }),
    },
  };
}

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
  412: 'PRECONDITION_FAILED',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  422: 'UNPROCESSABLE_CONTENT',
  429: 'TOO_MANY_REQUESTS',
  503: 'SERVICE_UNAVAILABLE',
};

/** A `RequestError` as tRPC's error: its status as tRPC's code, itself as the cause. */
export function toTrpcError(error: RequestError): TRPCError {
  const code = CODE_BY_STATUS[error.status] ?? 'INTERNAL_SERVER_ERROR';
  return new TRPCError({ code, message: error.message, cause: error });
}

/**
 * What a tRPC error tells the client, as REST would say it: the `RequestError` behind it, or tRPC's
 * own errors (an unknown procedure, a body it cannot parse); 5xx causes are never shown, nor an
 * exception's own text that tRPC copied into its message.
 */
export function describeTrpcError(error: TRPCError): HttpError {
  if (error.cause instanceof RequestError) return toHttpError(error.cause);
  const status = getHTTPStatusCodeFromError(error);
  if (status >= 500) return toHttpError(error);
  const copied = error.cause !== undefined && error.message === error.cause.message;
  return { status, message: copied ? INVALID_REQUEST : error.message, headers: {} };
}

const INVALID_REQUEST = 'The request is not a valid tRPC request.';

/**
 * The refusal of an input that is not superjson's JSON (not JSON, or metadata superjson cannot
 * apply): in our words, since the exception's (a JavaScript engine's) must not reach a client.
 */
export function unreadableInput(where: 'request body' | 'request parameters', cause: unknown): RequestError {
  return new RequestError('bad_request', `Invalid ${where}: the input is not valid tRPC JSON (superjson).`, {
    cause,
  });
}

/**
 * Every procedure's first step: the token and the operation's scope are checked before tRPC reads
 * the input (it reads it lazily, when a step asks), so that a call without a token is answered 401
 * whatever its input, as REST and the pipeline order it; then an input tRPC cannot read is refused
 * by `unreadableInput`.
 * @see https://trpc.io/docs/server/middlewares
 */
function procedureOf(operation: AnyOperation) {
  return t.procedure.use(({ ctx, type, getRawInput, next }) => {
    try {
      authorize(ctx.auth, operation.scope);
    } catch (error) {
      throw asTrpcError(error);
    }
    const where = type === 'mutation' ? 'request body' : 'request parameters';
    return next({
      getRawInput: () =>
        getRawInput().catch((cause: unknown) => {
          throw asTrpcError(unreadableInput(where, cause));
        }),
    });
  });
}

/** Any error as tRPC's: a `RequestError` as its `TRPCError`, anything else as tRPC would wrap it. */
export function asTrpcError(error: unknown): unknown {
  return error instanceof RequestError ? toTrpcError(error) : error;
}

/**
 * The input a procedure hands the pipeline, as it came: typed as the operation's input for
 * clients, validated by `runOperation` (so in the same order as REST: after authorization).
 */
function asSent<I>() {
  return (input: unknown) => input as I;
}

/** One call of `operation` through the pipeline, as a procedure answers it. */
async function call(operation: AnyOperation, ctx: Context, readInput: () => unknown, key?: string) {
  try {
    const result = await runOperation(operation, ctx, readInput, key);
    return 'replay' in result ? replayedOutput(result.replay) : result.output;
  } catch (error) {
    throw asTrpcError(error);
  }
}

/**
 * A mutation. One that accepts an Idempotency-Key takes it from the /trpc request's
 * `Idempotency-Key` header (for a request of one call only); a replay resolves to the stored
 * answer's body.
 */
function toMutation<I extends z.ZodType, O>(operation: Operation<I, O>) {
  return procedureOf(operation as AnyOperation)
    .input(asSent<z.input<I>>())
    .mutation(
      ({ ctx, input }) =>
        call(operation as AnyOperation, ctx, () => input, ctx.request.idempotencyKey) as Promise<O>,
    );
}

function toQuery<I extends z.ZodType, O>(operation: Operation<I, O>) {
  return procedureOf(operation as AnyOperation)
    .input(asSent<z.input<I>>())
    .query(({ ctx, input }) => call(operation as AnyOperation, ctx, () => input) as Promise<O>);
}

/** `lastEventId`, which `httpSubscriptionLink` adds to a resumed subscription's input. */
const ResumeSchema = z.object({
  lastEventId: z
    .string()
    .regex(/^[0-9]{1,19}$/, { error: 'must be an event id' })
    .nullish(),
});

/** A subscription's input with its `lastEventId` as `after`, which it overrides. */
export function resumeInput(input: unknown): unknown {
  if (typeof input !== 'object' || input === null || !('lastEventId' in input)) return input;
  const parsed = ResumeSchema.safeParse(input);
  if (!parsed.success) {
    throw new RequestError('bad_request', describeIssues(parsed.error.issues, 'request parameters'));
  }
  const { lastEventId, ...rest } = input as { lastEventId?: string | null };
  return lastEventId ? { ...rest, after: BigInt(lastEventId) } : rest;
}

/**
 * A stream as a tRPC subscription over SSE: each event `tracked()` with its id, so that
 * `httpSubscriptionLink` resumes with `lastEventId` after a reconnection. A consumer too slow for
 * its events gets SERVICE_UNAVAILABLE saying so. A stream the hub cuts otherwise (a shutdown,
 * another token's stream taking its place) cuts the connection rather than completing the subscription,
 * so the client reconnects (to another instance, after a shutdown) and resumes. A revoked token's
 * ends with UNAUTHORIZED, which the client does not retry. What `httpSubscriptionLink` sends is
 * answered by trpc/subscription.ts in the same bytes; tRPC's handler serves this procedure for the
 * rest (a `trpc-accept` header, other parameters), and the router's types come from it.
 */
function toSubscription<S extends z.ZodRawShape>(operation: Operation<z.ZodObject<S>, EventStream>) {
  type Input = z.input<z.ZodObject<S>> & { lastEventId?: string | null };
  const procedure = procedureOf(operation as AnyOperation);
  return procedure.input(asSent<Input>()).subscription(async function* ({ ctx, input, signal }) {
    // Run inside the generator, before its first event: a refusal (410, 429, 503) is thrown as its
    // TRPCError, which httpSubscriptionLink does not retry forever as it would a 500.
    const stream = (await call(operation as AnyOperation, ctx, () => resumeInput(input))) as EventStream;
    // tRPC aborts `signal` when the client goes away, but can only end the generator at a `yield`:
    // waiting for an event, it would hold the stream (and its slot) until one came.
    const close = () => stream.close();
    signal?.addEventListener('abort', close, { once: true });
    if (signal?.aborted) close();
    try {
      for await (const event of stream) yield tracked(String(event.id), toPlantEvent(event));
    } finally {
      signal?.removeEventListener('abort', close);
    }
    const ended = await stream.ended;
    if (ended === 'revoked')
      throw toTrpcError(new RequestError('invalid_token', 'The bearer token was revoked.'));
    if (ended === 'overflow') {
      // The error goes behind what the socket holds already: read by then, or the connection is cut.
      setTimeout(() => ctx.request.abort(), OVERFLOW_GRACE_MS).unref();
      throw toTrpcError(new RequestError('busy', OVERFLOW_MESSAGE));
    }
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
