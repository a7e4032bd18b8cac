import {
  type ApiError,
  INTEGER_LITERAL,
  type ListPlantsQuery,
  type NewPlant,
  type Plant,
  type PlantEvent,
  PlantEventSchema,
  type PlantEventType,
  type PlantId,
  PlantSchema,
  type PlantWithId,
  PlantWithIdSchema,
  parseJson,
} from '@plant-store/schema';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { z } from 'zod';
import { failureReason, PlantStoreError } from './errors.ts';
import { createEndpointsClient, type WebhookEndpointsClient } from './rest-endpoints.ts';
import {
  type Answer,
  type Call,
  type CallOptions,
  createSender,
  errorBody,
  nextLinkParam,
} from './rest-send.ts';
import { deleteAttempts, keyFor, type RetryOptions, withRetries } from './retry.ts';

export type {
  DeliveriesQuery,
  DeliveryPage,
  EndpointCallOptions,
  WebhookEndpointsClient,
} from './rest-endpoints.ts';
export { type CallOptions, PlantStoreError, type RetryOptions };

/** Options of {@link createRestClient}. */
export type RestClientOptions = {
  /** Where the server is, such as `http://127.0.0.1:3000` (no trailing `/plants`). */
  baseUrl: string | URL;
  /** A bearer token the server accepts (one of its `API_TOKENS`). */
  token: string;
  /** The `fetch` to use instead of the global one. */
  fetch?: typeof globalThis.fetch;
  /**
   * How creates and deletes are retried (see {@link RetryOptions}); 3 attempts by default. While
   * retries are on, each create and delete carries an `Idempotency-Key` (a new random UUID).
   */
  retry?: RetryOptions;
};

/** One page of {@link RestClient.listPlants}. */
export type PlantPage = {
  /** The plants of this page, in ascending id order. */
  plants: PlantWithId[];
  /**
   * The `after` of the next page (the server's `Link: <…>; rel="next"`), or `undefined` when this
   * page is the last one.
   */
  next: PlantId | undefined;
};

/** The Plant Store over its REST API. Every method throws only {@link PlantStoreError}. */
export type RestClient = {
  /** `POST /plants`: creates a plant and resolves to it as the server answered (`Plant`, no id). */
  createPlant(plant: NewPlant, options?: CallOptions): Promise<Plant>;
  /**
   * `GET /plants`: one page of at most `limit` plants (server default 100, at most 1000) with ids
   * greater than `after`. Pass the page's `next` as `after` to read the following page.
   */
  listPlants(query?: ListPlantsQuery, options?: CallOptions): Promise<PlantPage>;
  /** `GET /plants/{id}`: the plant with this id; a 404 `PlantStoreError` when there is none. */
  getPlant(id: PlantId, options?: CallOptions): Promise<PlantWithId>;
  /** `DELETE /plants/{id}`: deletes the plant; a 404 `PlantStoreError` when there is none. */
  deletePlant(id: PlantId, options?: CallOptions): Promise<void>;
  /**
   * `GET /plants/events`: every create and delete committed from now on (or after the event id
   * `after`; `0n` for every event the server still keeps), in order, as they commit; only those of
   * `types` when given (event ids then have gaps: they are the log's). It reconnects
   * by itself after a network error, a dropped connection or a 429/503, resuming after the last
   * event it delivered (no gap, no repeat), and throws a {@link PlantStoreError} only on an answer
   * that retrying cannot fix (400, 401, 403, 410: the events after `after` are no longer kept…).
   * It ends when the loop over it stops (`break`) or `signal` aborts.
   *
   * ```ts
   * for await (const event of client.events({ after: 0n })) console.log(event.type, event.plant.id);
   * ```
   */
  events(options?: EventsOptions): AsyncIterable<PlantEvent>;
  /** The token's own webhook endpoints and their deliveries: `client.endpoints.create({ url })`. */
  endpoints: WebhookEndpointsClient;
};

/** Options of {@link RestClient.events}. */
export type EventsOptions = {
  /** Start after this event id (the last one seen); without it, only events from now on. */
  after?: bigint;
  /** Only these types of event (`['plant.deleted']`); every type by default. */
  types?: readonly PlantEventType[];
  /** Ends the iteration (without an error) and closes the connection. */
  signal?: AbortSignal;
  /** Called before each reconnection with why, and how long it waits first. */
  onReconnect?: (reconnect: { error: PlantStoreError; delayMs: number }) => void;
};

const PlantListSchema = z.array(PlantWithIdSchema);

/**
 * A client of the REST API needing only `fetch` and `@plant-store/schema`. Bodies go out and come
 * back through the exact JSON codec, so int64 ids never lose a digit.
 */
export function createRestClient(options: RestClientOptions): RestClient {
  const sendOnce = createSender(options);
  // Retried: keyed calls (the server answers a repeat of one that did commit as it did then), and
  // calls whose repeat changes nothing more. Never a create, rotation or ping without a key.
  const send = <T>(request: Call<T>, call: CallOptions = {}) => {
    const once = () => sendOnce(request, call);
    if (request.idempotencyKey !== undefined || request.repeatable === 'safe') {
      return withRetries(once, options.retry, call.signal);
    }
    if (request.repeatable === 'delete') {
      const done: Answer<T> = { data: undefined as T, headers: new Headers(), url: '' };
      return withRetries(deleteAttempts(once, done), options.retry, call.signal);
    }
    return once();
  };
  return {
    async createPlant(plant, call) {
      const idempotencyKey = keyFor(call?.idempotencyKey, options.retry);
      return (
        await send(
          { method: 'POST', path: '/plants', body: plant, answer: PlantSchema, idempotencyKey },
          call,
        )
      ).data;
    },
    async listPlants({ limit, after } = {}, call) {
      const query: Record<string, string> = {};
      if (limit !== undefined) query.limit = String(limit);
      if (after !== undefined) query.after = String(after);
      const { data, headers, url } = await send(
        { method: 'GET', path: '/plants', query, answer: PlantListSchema },
        call,
      );
      const next = nextLinkParam(headers.get('link'), url, 'after');
      return {
        plants: data,
        next: next !== undefined && INTEGER_LITERAL.test(next) ? BigInt(next) : undefined,
      };
    },
    async getPlant(id, call) {
      return (await send({ method: 'GET', path: `/plants/${id}`, answer: PlantWithIdSchema }, call)).data;
    },
    async deletePlant(id, call) {
      const idempotencyKey = keyFor(call?.idempotencyKey, options.retry);
      await send({ method: 'DELETE', path: `/plants/${id}`, answer: undefined, idempotencyKey }, call);
    },
    events: (events) => streamEvents(options, events),
    endpoints: createEndpointsClient(send),
  };
}

/** The first wait before reconnecting, until the server's `retry:` says otherwise. */
const RECONNECT_MS = 1_000;
/** The longest wait between two attempts, whatever the failures, `retry:` or Retry-After say. */
const MAX_RECONNECT_MS = 30_000;
/** Statuses worth trying again: the server is busy, restarting, or behind a proxy that is. */
const RETRIED = new Set([408, 429, 500, 502, 503, 504]);

async function* streamEvents(
  { baseUrl, token, fetch = globalThis.fetch }: RestClientOptions,
  { after, types, signal, onReconnect }: EventsOptions = {},
): AsyncGenerator<PlantEvent, void, undefined> {
  const filter = types === undefined ? '' : `?types=${types.join(',')}`;
  const url = `${String(baseUrl).replace(/\/+$/, '')}/plants/events${filter}`;
  const fail = (init: { status: number; body?: ApiError; reason?: string; cause?: unknown }) =>
    new PlantStoreError({ method: 'GET', url, ...init });
  let last = after;
  let reconnectMs = RECONNECT_MS;
  /** Failed attempts in a row: the wait doubles with each, up to MAX_RECONNECT_MS. */
  let failures = 0;
  while (!signal?.aborted) {
    // One connection per turn, closed when the consumer stops, `signal` aborts, or it fails.
    const connection = new AbortController();
    const abort = () => connection.abort();
    signal?.addEventListener('abort', abort);
    let wait: { error: PlantStoreError; delayMs: number };
    try {
      const response = await fetch(url, {
        headers: {
          authorization: `Bearer ${token}`,
          accept: 'text/event-stream',
          ...(last !== undefined && { 'last-event-id': String(last) }),
        },
        signal: connection.signal,
      });
      if (!response.ok) {
        const text = await response.text();
        const error = fail({ status: response.status, body: errorBody(text), reason: response.statusText });
        if (!RETRIED.has(response.status)) throw error;
        // A server that says when to come back is waited for as it says, without growing the backoff:
        // a long shutdown answering 503 must not leave a 30 s wait for the instance that replaces it.
        const told = retryAfter(response.headers.get('retry-after'));
        if (told === undefined) failures++;
        wait = { error, delayMs: told ?? backoff(reconnectMs, failures) };
      } else {
        if (!response.headers.get('content-type')?.startsWith('text/event-stream') || !response.body) {
          throw fail({ status: response.status, reason: 'the answer is not an event stream' });
        }
        failures = 0;
        const messages: EventSourceMessage[] = [];
        const parser = createParser({
          onEvent: (message) => messages.push(message),
          onRetry: (ms) => {
            reconnectMs = Math.min(ms, MAX_RECONNECT_MS);
          },
        });
        const decoder = new TextDecoder();
        try {
          for await (const chunk of response.body) {
            parser.feed(decoder.decode(chunk, { stream: true }));
            for (const message of messages.splice(0)) {
              const event = toEvent(message, fail);
              last = event.id;
              yield event;
            }
          }
          wait = { error: fail({ status: 0, reason: 'the server ended the stream' }), delayMs: reconnectMs };
        } catch (cause) {
          if (cause instanceof PlantStoreError || signal?.aborted) throw cause;
          failures++;
          wait = {
            error: fail({ status: 0, reason: failureReason(cause), cause }),
            delayMs: backoff(reconnectMs, failures),
          };
        }
      }
    } catch (cause) {
      if (signal?.aborted) return;
      if (cause instanceof PlantStoreError) throw cause;
      failures++;
      wait = {
        error: fail({ status: 0, reason: failureReason(cause), cause }),
        delayMs: backoff(reconnectMs, failures),
      };
    } finally {
      signal?.removeEventListener('abort', abort);
      connection.abort();
    }
    onReconnect?.(wait);
    await sleep(wait.delayMs, signal);
  }
}

/** One SSE message as an event; anything else is the server not speaking the API. */
function toEvent(
  message: EventSourceMessage,
  fail: (init: { status: number; reason: string; cause?: unknown }) => PlantStoreError,
): PlantEvent {
  let json: unknown;
  try {
    json = parseJson(message.data);
  } catch (cause) {
    throw fail({ status: 200, reason: 'an event is not JSON', cause });
  }
  const parsed = PlantEventSchema.safeParse(json);
  if (!parsed.success || String(parsed.data.id) !== message.id) {
    throw fail({ status: 200, reason: 'an event is not what the API describes', cause: parsed.error });
  }
  return parsed.data;
}

/** `base` doubled per failure in a row (the first waits `base`), at most MAX_RECONNECT_MS. */
function backoff(base: number, failures: number): number {
  return Math.min(base * 2 ** Math.max(0, failures - 1), MAX_RECONNECT_MS);
}

/** A `Retry-After` header (seconds or an HTTP date) in milliseconds, at most MAX_RECONNECT_MS. */
function retryAfter(header: string | null): number | undefined {
  if (header === null) return undefined;
  const ms = /^[0-9]+$/.test(header.trim()) ? Number(header) * 1000 : Date.parse(header) - Date.now();
  return Number.isNaN(ms) ? undefined : Math.min(Math.max(ms, 0), MAX_RECONNECT_MS);
}

/** Resolves after `ms`, or at once when `signal` aborts. */
function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}
