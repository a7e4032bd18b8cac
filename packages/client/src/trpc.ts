import type { AppRouter } from '@plant-store/api';
import type { ListPlantsQuery, PlantWithId } from '@plant-store/schema';
import {
  type CreateTRPCClientOptions,
  createTRPCClientProxy,
  httpBatchLink,
  httpLink,
  httpSubscriptionLink,
  retryLink,
  splitLink,
  type TRPCClient,
  TRPCClientError,
  type TRPCLink,
  type TRPCRequestOptions,
  TRPCUntypedClient,
} from '@trpc/client';
import { observable } from '@trpc/server/observable';
import superjson from 'superjson';
import { readingFetch, UnusableAnswerError } from './answer-read.ts';
import { failureReason, PlantStoreError } from './errors.ts';
import { guardEventStream } from './event-stream-guard.ts';
import { everyPlant, nextPageProblem } from './plant-pages.ts';
import {
  deleteAttempts,
  idempotencyKeyHeader,
  keyFor,
  markRetriable,
  type RetryOptions,
  withRetries,
} from './retry.ts';
import { traceHeadersOf, traceLink } from './trace-context.ts';
import { TrpcEventSource } from './trpc-event-source.ts';

/** The mutations that take an Idempotency-Key, and so are retried (see `RetryOptions`). */
const KEYED = new Set(['plants.create', 'plants.update', 'plants.delete']);
/**
 * Calls retried without a key, as the REST client retries them: a repeat changes nothing more
 * (and a retried delete that finds the endpoint gone resolves, see `deleteAttempts`).
 */
const REPEATABLE = new Set([
  'webhookEndpoints.list',
  'webhookEndpoints.get',
  'webhookEndpoints.update',
  'webhookEndpoints.deliveries',
  'webhookEndpoints.redeliver',
]);
const REPEATABLE_DELETE = 'webhookEndpoints.delete';

/** Calls per HTTP request unless `batch.maxItems` says otherwise. */
const DEFAULT_MAX_ITEMS = 10;

/** The wait before resubscribing after a subscription failed, doubled per failure in a row up to `max`. */
const RESUBSCRIBE_MS = { first: 1_000, max: 30_000 };
/** Statuses a subscription is retried on (busy, restarting); no status at all (network) is too. */
const RETRIED = new Set([408, 429, 500, 502, 503, 504]);

/** Options of {@link createTrpcClient}. */
export type TrpcClientOptions = {
  /** Where the server is, such as `http://127.0.0.1:3000`; calls go to `{baseUrl}/trpc`. */
  baseUrl: string | URL;
  /** A bearer token the server accepts (one of its `API_TOKENS`). */
  token: string;
  /**
   * Calls made in the same tick share one HTTP request, at most `maxItems` (default 10) each. The
   * server refuses a request of more than 100 calls (413 on every call).
   */
  batch?: { maxItems?: number };
  /** The `fetch` to use instead of the global one. */
  fetch?: typeof globalThis.fetch;
  /**
   * How `plants.create`, `plants.update` and `plants.delete` (and the webhook endpoint calls that are safe to
   * repeat) are retried (see {@link RetryOptions}); 3 attempts by
   * default. While retries are on, each is sent on its own (a key names one request, so keyed calls
   * are not batched) with an `Idempotency-Key`, the same on every attempt; pass
   * `{ context: { idempotencyKey } }` as the mutation's options to choose it. With
   * `{ attempts: 1 }` they carry no key and are batched like every other call.
   */
  retry?: RetryOptions;
  /**
   * The longest wait before a subscription reconnects, in ms, whatever the failures or the event
   * stream's `retry:` field say (default 30 000).
   */
  maxReconnectMs?: number;
};

/**
 * The typed tRPC client of the Plant Store: `client.plants.create.mutate({ id: 1n, name })`, and
 * `client.plants.events.subscribe({}, { onData })` for live events.
 */
export type TrpcClient = TRPCClient<AppRouter>;

/**
 * A typed client of the server's tRPC endpoint (superjson, so bigint ids travel exactly), batching
 * concurrent calls. A failed call rejects with {@link PlantStoreError}, never `TRPCClientError`:
 * `status` is the HTTP status of that call (`0` when no answer arrived), `cause` the tRPC error.
 *
 * Queries and mutations carry the caller's OpenTelemetry trace context (`traceparent`), if any.
 *
 * Subscriptions (`plants.events`) run over Server-Sent Events. When the connection drops, or the
 * server is busy or restarting (429, 503), the client reconnects by itself and resumes after the
 * last event it delivered (`lastEventId`): no gap, no repeat. `onError` gets a
 * {@link PlantStoreError} for what retrying cannot fix (401, 403, 410).
 */
export function createTrpcClient({
  baseUrl,
  token,
  batch = {},
  fetch = globalThis.fetch,
  retry,
  maxReconnectMs = RESUBSCRIBE_MS.max,
}: TrpcClientOptions): TrpcClient {
  const url = `${String(baseUrl).replace(/\/+$/, '')}/trpc`;
  const authorization = `Bearer ${token}`;
  const calls = readingFetch(fetch);
  const callLinks = splitLink<AppRouter>({
    // The server takes a key from the header of a request of one call.
    condition: (op) => typeof op.context.idempotencyKey === 'string',
    true: httpLink({
      url,
      transformer: superjson,
      headers: ({ op }) => ({
        authorization,
        'idempotency-key': idempotencyKeyHeader(op.context.idempotencyKey as string),
        ...traceHeadersOf(op),
      }),
      fetch: calls,
    }),
    false: httpBatchLink({
      url,
      transformer: superjson,
      maxItems: batch.maxItems ?? DEFAULT_MAX_ITEMS,
      // One request for the batch: it carries its first call's trace context.
      headers: ({ opList }) => ({ authorization, ...traceHeadersOf(opList[0]) }),
      fetch: calls,
    }),
  });
  const subscriptions = [
    plantStoreErrors(url),
    // Resubscribes with the last tracked id when EventSource gives up (an answer other than 200).
    retryLink<AppRouter>({
      retry: ({ op, error }) => op.type === 'subscription' && isRetried(subscriptionStatus(error)),
      retryDelayMs: (attempt) => Math.min(RESUBSCRIBE_MS.first * 2 ** (attempt - 1), maxReconnectMs),
    }),
    httpSubscriptionLink<AppRouter, typeof TrpcEventSource>({
      url,
      transformer: superjson,
      EventSource: TrpcEventSource,
      // EventSource itself reconnects after a network error or a clean end, with Last-Event-ID,
      // after the stream's own `retry:` delay: the guard caps it, and the size of an event.
      eventSourceOptions: {
        fetch: async (input, init) =>
          guardEventStream(
            await fetch(input, { ...init, headers: { ...init?.headers, authorization } }),
            maxReconnectMs,
          ),
      },
    }),
  ];
  const link = splitLink<AppRouter>({
    condition: (op) => op.type === 'subscription',
    true: subscriptions,
    false: callLinks,
  });
  const client: TrpcClient = createTRPCClientProxy(
    new ErrorMappingClient({ links: [traceLink(), link] }, url, retry),
  );
  endpoints.set(client, url);
  return client;
}

/** Each client's tRPC endpoint, for the errors of {@link allPlants}. */
const endpoints = new WeakMap<TrpcClient, string>();

/**
 * Every plant `query` selects over tRPC (`plants.list` with its `tag`, `name_prefix`; from
 * `after`), in id order, reading pages of `limit` as the loop goes. A page whose `next` does not
 * come after it fails with a `PlantStoreError` rather than reading on forever.
 *
 * ```ts
 * for await (const plant of allPlants(trpc, { tag: 'aroid' })) console.log(plant.id, plant.version);
 * ```
 */
export function allPlants(
  client: TrpcClient,
  query: ListPlantsQuery = {},
  options: { signal?: AbortSignal } = {},
): AsyncGenerator<PlantWithId, void, undefined> {
  const url = `${endpoints.get(client) ?? 'trpc'}/plants.list`;
  return everyPlant(async (after) => {
    const { plants, next } = await client.plants.list.query({ ...query, after }, options);
    if (next === null) return { plants, next: undefined };
    const reason = nextPageProblem(plants, next, after);
    if (reason !== undefined) throw new PlantStoreError({ method: 'GET', url, status: 200, reason });
    return { plants, next };
  }, query.after);
}

/**
 * A subscription's failure, once retrying has given up, as a {@link PlantStoreError}: what its
 * `onError` (or its async iterator) gets. Calls map theirs in {@link ErrorMappingClient}, since
 * tRPC wraps whatever a link throws for a call's promise in `TRPCClientError`.
 */
function plantStoreErrors(url: string): TRPCLink<AppRouter> {
  return () =>
    ({ op, next }) =>
      observable((observer) =>
        next(op).subscribe({
          next: (value) => observer.next(value),
          error: (error) => observer.error(toPlantStoreError(error, 'GET', `${url}/${op.path}`) as never),
          complete: () => observer.complete(),
        }),
      );
}

/** The HTTP status that ended a subscription's connection; `undefined` when there was no answer. */
function subscriptionStatus(error: TRPCClientError<AppRouter>): number | undefined {
  const status: unknown = error.data?.httpStatus ?? (error.cause as { code?: unknown } | undefined)?.code;
  return typeof status === 'number' ? status : undefined;
}

function isRetried(status: number | undefined): boolean {
  return status === undefined || RETRIED.has(status);
}

/**
 * tRPC wraps whatever a link throws for a call's promise in `TRPCClientError`, so calls are
 * mapped (and retried) here, at the untyped client that the typed proxy calls for every
 * `.query()` and `.mutate()`: public methods of a public class. Subscriptions keep tRPC's own
 * `subscription()`; their errors are mapped by a link (`plantStoreErrors`).
 */
class ErrorMappingClient extends TRPCUntypedClient<AppRouter> {
  readonly #url: string;
  readonly #retry: RetryOptions | undefined;

  constructor(options: CreateTRPCClientOptions<AppRouter>, url: string, retry?: RetryOptions) {
    super(options);
    this.#url = url;
    this.#retry = retry;
  }

  override query(path: string, input?: unknown, opts?: TRPCRequestOptions): Promise<unknown> {
    const once = () =>
      super.query(path, input, opts).catch((error: unknown) => {
        throw toPlantStoreError(error, 'GET', `${this.#url}/${path}`);
      });
    return REPEATABLE.has(path) ? withRetries(once, this.#retry, opts?.signal ?? undefined) : once();
  }

  override mutation(path: string, input?: unknown, opts?: TRPCRequestOptions): Promise<unknown> {
    const once = (options?: TRPCRequestOptions) =>
      super.mutation(path, input, options).catch((error: unknown) => {
        throw toPlantStoreError(error, 'POST', `${this.#url}/${path}`);
      });
    if (REPEATABLE.has(path)) return withRetries(() => once(opts), this.#retry, opts?.signal ?? undefined);
    if (path === REPEATABLE_DELETE) {
      return withRetries(
        deleteAttempts(() => once(opts), undefined),
        this.#retry,
        opts?.signal ?? undefined,
      );
    }
    const given = opts?.context?.idempotencyKey;
    const idempotencyKey = KEYED.has(path)
      ? keyFor(typeof given === 'string' ? given : undefined, this.#retry)
      : undefined;
    if (idempotencyKey === undefined) return once(opts);
    const keyed = { ...opts, context: { ...opts?.context, idempotencyKey } };
    return withRetries(() => once(keyed), this.#retry, opts?.signal ?? undefined);
  }
}

function toPlantStoreError(error: unknown, method: string, url: string): unknown {
  if (!(error instanceof TRPCClientError)) return error;
  // `data.httpStatus` is this call's own status, also inside a batch answered 207.
  const httpStatus: unknown = error.data?.httpStatus;
  if (typeof httpStatus === 'number') {
    const failure = new PlantStoreError({
      method,
      url,
      status: httpStatus,
      body: { error: httpStatus, message: error.message },
      cause: error,
    });
    // A 409 with Retry-After: the same Idempotency-Key is still in flight (not a duplicate id).
    const headers = (error.meta?.response as { headers?: Headers } | undefined)?.headers;
    if (httpStatus === 409 && headers?.has('retry-after')) markRetriable(failure);
    return failure;
  }
  // An answer that arrived but cannot be used (not JSON, such as a proxy's 502 page, or too large).
  if (error.cause instanceof UnusableAnswerError) {
    const { status, message } = error.cause;
    return new PlantStoreError({ method, url, status, reason: message, cause: error });
  }
  // No tRPC error body: the request failed, or a subscription's EventSource failed (its error
  // event has the status as `code`).
  const response = error.meta?.response as { status?: unknown } | undefined;
  const code = (error.cause as { code?: unknown } | undefined)?.code;
  const status = typeof response?.status === 'number' ? response.status : typeof code === 'number' ? code : 0;
  return new PlantStoreError({ method, url, status, reason: failureReason(error), cause: error });
}
