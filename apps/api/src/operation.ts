import type { OpenApiMeta, OpenApiMethod } from 'trpc-to-openapi';
import type { z } from 'zod';
import type { AuthResult, Principal } from './auth.ts';
import type { Scope } from './scopes.ts';
import { ApiError } from './errors.ts';
import type { EventHub } from './events/hub.ts';
import type { RequestScope } from './heavy-reads.ts';
import { type KeyClaim, StoreUnavailableError, type PlantStore } from './store/store.ts';
import type { EndpointSettings } from './webhooks/endpoints.ts';
import type { NewPlantWebhook } from './webhooks/event.ts';

/** What an operation runs with once the caller is authenticated. */
export type OperationContext = {
  store: PlantStore;
  /** The new-plant webhook's subscribers: what a create enqueues with the plant. */
  webhooks: NewPlantWebhook;
  /** The event streams of this instance. */
  events: EventHub;
  /** Webhook endpoints' settings; without them (or their secrets key) the endpoint operations answer 503. */
  endpoints?: EndpointSettings;
  principal: Principal;
  request: RequestScope;
  /** The Idempotency-Key this call holds, when it came with one (idempotency.ts). */
  keyClaim?: KeyClaim;
};

/**
 * One API operation, written once and served twice: as a tRPC procedure (trpc.ts: a query for GET,
 * else a mutation) and as a REST route (http/rest.ts), both authorizing with `authorize`,
 * validating with `input` and running `run`. operations/index.ts lists them all.
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
  /** The REST answer's schema, for the OpenAPI document (answers are built by `run`, not re-parsed). */
  output?: z.ZodType;
  run(ctx: OperationContext, input: z.output<I>): Promise<O>;
  /**
   * Accepts an `Idempotency-Key` (idempotency.ts): `run` then stores its answer with its change,
   * passing `keyedAnswer(ctx, …)` to the store.
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
 * Lets the request through if its bearer token was valid (401 otherwise, see http/auth.ts for
 * where the token is checked) and allows `scope` (403 otherwise). Both transports call it.
 */
export function authorize(auth: AuthResult, scope: Scope): Principal {
  if (!auth.ok) {
    throw auth.reason === 'missing'
      ? new ApiError('missing_token', 'Missing bearer token: send it as "Authorization: Bearer <token>".')
      : new ApiError('invalid_token', 'The bearer token is not valid.');
  }
  if (!auth.principal.scopes.includes(scope)) {
    throw new ApiError('forbidden', `This token lacks the ${scope} scope this operation needs.`);
  }
  return auth.principal;
}

/** Runs a store operation, turning "the store is unavailable" into a 503. */
export async function storeCall<T>(operation: () => Promise<T>): Promise<T> {
  try {
    return await operation();
  } catch (cause) {
    if (cause instanceof StoreUnavailableError) {
      throw new ApiError('unavailable', 'The store is unavailable; retry the request later.', { cause });
    }
    throw cause;
  }
}

/**
 * A page's REST headers: `Link: <path?query>; rel="next"` (RFC 8288) while more remain (`cursor`
 * set), none on the last page. The next page asks for the same limit: a page can end early (at a
 * byte budget), so the limit says nothing about how many remain.
 */
export function nextPageHeaders(
  path: string,
  limit: number,
  cursor: { name: string; value: bigint | string } | null,
): Record<string, string> {
  return cursor === null
    ? {}
    : { Link: `<${path}?limit=${limit}&${cursor.name}=${cursor.value}>; rel="next"` };
}
