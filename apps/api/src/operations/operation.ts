import type { Span } from '@opentelemetry/api';
import { getPathParameters, normalizePath, type OpenApiMeta, type OpenApiMethod } from 'trpc-to-openapi';
import type { z } from 'zod';
import type { AuthResult, Principal } from '../auth/tokens.ts';
import { RequestError } from '../errors.ts';
import type { Scope } from '../auth/scopes.ts';
import type { EventHub } from '../events/hub.ts';
import type { HeavyReads } from './heavy-reads.ts';
import type { IdempotencyPolicy } from '../config/config.ts';
import { type KeyClaim, StoreUnavailableError, type PlantStore } from '../store/contract.ts';
import type { EndpointSettings } from '../webhooks/endpoints.ts';
import type { NewPlantWebhook } from '../webhooks/event.ts';

/** The HTTP request a call arrived in, as its transport describes it. */
export type RequestScope = {
  /** How many calls the request carries: 1 over REST, the batch's size over /trpc. */
  calls: number;
  /** The request's span, when tracing records it (http/trace-middleware.ts). */
  span?: Span;
  /** The request's `Idempotency-Key` header, as sent; `undefined` without one. */
  idempotencyKey?: string;
  /** REST: the request's `If-Match` header, as sent (tRPC callers send `expectedVersion` instead). */
  ifMatch?: string;
  /** REST: gives the answer the `ETag` of this plant version (see conditions.ts). */
  setVersion?(version: bigint): void;
  /** Marks the answer as the stored answer of an earlier request: `Idempotent-Replayed: true`. */
  markReplayed?(): void;
  /** Runs `done` once the answer has been sent or the connection has closed. */
  onAnswered(done: () => void): void;
  /** Cuts the connection at once, mid-answer: a stream's client then resumes, here or elsewhere. */
  abort(): void;
};

/**
 * What the app gives every call, whichever transport brought it (the tRPC procedures' context
 * too): its parts, the request's token check and the request itself. Tests build it directly.
 */
export type RequestContext = {
  store: PlantStore;
  /** The new-plant webhook's subscribers: what a create enqueues with the plant. */
  webhooks: NewPlantWebhook;
  /** The event streams of this instance. */
  events: EventHub;
  /** Webhook endpoints' settings; without them (or their secrets key) the endpoint operations answer 503. */
  endpoints?: EndpointSettings;
  /** This app's bound on lists read at once. */
  heavyReads: HeavyReads;
  /** How Idempotency-Keys are kept. */
  idempotency: IdempotencyPolicy;
  /** The request's bearer token, checked once per HTTP request (auth/token-check.ts). */
  auth: AuthResult;
  request: RequestScope;
};

/** What an operation runs with once the caller is authorized (pipeline.ts). */
export type OperationContext = Omit<RequestContext, 'auth' | 'idempotency'> & {
  principal: Principal;
  /** The Idempotency-Key this call holds, when it came with one (idempotency.ts). */
  keyClaim?: KeyClaim;
};

/**
 * One API operation, written once and served twice: as a tRPC procedure (trpc.ts: a query for GET,
 * else a mutation) and as a REST route (http/rest.ts), both through `runOperation` (pipeline.ts),
 * which authorizes for `scope`, validates with `input` and calls `run`. operations/registry.ts lists
 * them all.
 */
export type Operation<
  I extends z.ZodType = z.ZodType,
  O = unknown,
  M extends OpenApiMethod = OpenApiMethod,
> = {
  /** The REST route and its OpenAPI description, in trpc-to-openapi's metadata format. */
  openapi: NonNullable<OpenApiMeta['openapi']> & { method: M };
  /** What the caller's token must allow. */
  scope: Scope;
  /**
   * A stream: `run` resolves with an `EventStream` (events/hub.ts), served as a tRPC subscription
   * and as Server-Sent Events, each event described by `output`.
   */
  stream?: true;
  input: I;
  /**
   * REST: the JSON body's schema of an operation whose input is its path parameters plus a body (a
   * PATCH): the body's members and the path's parameters make the input, and a member that names a
   * path parameter must equal it.
   */
  body?: z.ZodType;
  /** The REST answer's schema, for the OpenAPI document (answers are built by `run`, not re-parsed). */
  output?: z.ZodType;
  run(ctx: OperationContext, input: z.output<I>): Promise<O>;
  /**
   * Accepts an `Idempotency-Key` (idempotency.ts): `run` then stores its answer with its change,
   * passing `keyRecord(ctx, …)` to the store.
   */
  idempotencyKey?: boolean;
  /**
   * How REST answers with `run`'s result when it is not simply `200` with the result as JSON body.
   * `path` is the request path and `input` the validated parameters (for links).
   */
  rest?: {
    status: number;
    present?(
      output: O,
      request: { path: string; input: z.output<I> },
    ): { body?: unknown; headers?: Record<string, string> };
  };
};

export type AnyOperation = Operation<z.ZodType, unknown>;

/** Identity helper that infers an operation's types, its REST method included. */
export function defineOperation<I extends z.ZodType, O, M extends OpenApiMethod>(
  operation: Operation<I, O, M>,
): Operation<I, O, M> {
  return operation;
}

export function isOperation(value: unknown): value is AnyOperation {
  return typeof (value as Partial<AnyOperation>).run === 'function';
}

/**
 * Whether an operation's input is a body (a POST to a path without parameters, or an operation with
 * a `body`, whose path parameters join it) rather than path and query parameters. REST reads it
 * from there; both transports name it so in their messages.
 */
export function takesBody({ openapi: { method, path }, body }: AnyOperation): boolean {
  if (body !== undefined) return true;
  return method.toUpperCase() === 'POST' && getPathParameters(normalizePath(path)).length === 0;
}

/**
 * Lets the request through if its bearer token was valid (401 otherwise, see auth/token-check.ts for
 * where the token is checked) and allows `scope` (403 otherwise): the pipeline's first step, and
 * /metrics'.
 */
export function authorize(auth: AuthResult, scope: Scope): Principal {
  if (!auth.ok) {
    throw auth.reason === 'missing'
      ? new RequestError('missing_token', 'Missing bearer token: send it as "Authorization: Bearer <token>".')
      : new RequestError('invalid_token', 'The bearer token is not valid.');
  }
  if (!auth.principal.scopes.includes(scope)) {
    throw new RequestError('forbidden', `This token lacks the ${scope} scope this operation needs.`);
  }
  return auth.principal;
}

/** Runs a store operation, turning "the store is unavailable" into a 503. */
export async function storeCall<T>(operation: () => Promise<T>): Promise<T> {
  try {
    return await operation();
  } catch (cause) {
    if (cause instanceof StoreUnavailableError) {
      throw new RequestError('unavailable', 'The store is unavailable; retry the request later.', { cause });
    }
    throw cause;
  }
}

/**
 * A page's REST headers: `Link: <path?query>; rel="next"` (RFC 8288) while more remain (`cursor`
 * set), none on the last page. The next page asks for the same limit and `filters` (those given):
 * a page can end early (at a byte budget), so the limit says nothing about how many remain.
 */
export function nextPageHeaders(
  path: string,
  limit: number,
  cursor: { name: string; value: bigint | string } | null,
  filters: Record<string, string | undefined> = {},
): Record<string, string> {
  if (cursor === null) return {};
  let query = `limit=${limit}`;
  for (const [name, value] of Object.entries(filters)) {
    if (value !== undefined) query += `&${name}=${encodeURIComponent(value)}`;
  }
  return { Link: `<${path}?${query}&${cursor.name}=${cursor.value}>; rel="next"` };
}
