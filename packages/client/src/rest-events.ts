import {
  type ApiError,
  type PlantEvent,
  PlantEventSchema,
  type PlantEventType,
  parseJson,
} from '@plant-store/schema';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { MAX_ERROR_ANSWER_BYTES, readAnswer } from './answer-read.ts';
import { failureReason, PlantStoreError } from './errors.ts';
import { EventTooLargeError, eventStreamGuard } from './event-stream-guard.ts';
import { errorBody } from './rest-send.ts';
import { retryAfterMs } from './retry-after.ts';
import { traceHeaders } from './trace-context.ts';

/** Where the stream is read from: the client's `baseUrl`, `token` and `fetch` (see `RestClientOptions`). */
type StreamTarget = { baseUrl: string | URL; token: string; fetch?: typeof globalThis.fetch };

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
  /**
   * The longest wait before reconnecting, in ms, whatever the failures, `Retry-After` or the
   * stream's `retry:` field say (default 30 000).
   */
  maxReconnectMs?: number;
};

/** The first wait before reconnecting, until the server's `retry:` says otherwise. */
const RECONNECT_MS = 1_000;
/** The longest wait between two attempts by default, whatever the failures, `retry:` or Retry-After say. */
const MAX_RECONNECT_MS = 30_000;
/** Statuses worth trying again: the server is busy, restarting, or behind a proxy that is. */
const RETRIED = new Set([408, 429, 500, 502, 503, 504]);

/** The events of `GET /plants/events` (see `RestClient.events`), reconnecting and resuming by themselves. */
export async function* streamEvents(
  { baseUrl, token, fetch = globalThis.fetch }: StreamTarget,
  { after, types, signal, onReconnect, maxReconnectMs = MAX_RECONNECT_MS }: EventsOptions = {},
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
          ...traceHeaders(),
        },
        signal: connection.signal,
      });
      if (!response.ok) {
        const text = await readAnswer(response, MAX_ERROR_ANSWER_BYTES).catch(() => '');
        const error = fail({ status: response.status, body: errorBody(text), reason: response.statusText });
        if (!RETRIED.has(response.status)) throw error;
        // A server that says when to come back is waited for as it says, without growing the backoff:
        // a long shutdown answering 503 must not leave a 30 s wait for the instance that replaces it.
        const told = retryAfterMs(response.headers.get('retry-after'));
        if (told === undefined) failures++;
        wait = {
          error,
          delayMs:
            told === undefined
              ? backoff(reconnectMs, failures, maxReconnectMs)
              : Math.min(told, maxReconnectMs),
        };
      } else {
        if (!response.headers.get('content-type')?.startsWith('text/event-stream') || !response.body) {
          throw fail({ status: response.status, reason: 'the answer is not an event stream' });
        }
        failures = 0;
        const messages: EventSourceMessage[] = [];
        const parser = createParser({
          onEvent: (message) => messages.push(message),
          onRetry: (ms) => {
            reconnectMs = Math.min(ms, maxReconnectMs);
          },
        });
        const guard = eventStreamGuard({ maxRetryMs: maxReconnectMs });
        const decoder = new TextDecoder();
        try {
          for await (const chunk of response.body) {
            parser.feed(guarded(guard, decoder.decode(chunk, { stream: true }), fail));
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
            delayMs: backoff(reconnectMs, failures, maxReconnectMs),
          };
        }
      }
    } catch (cause) {
      if (signal?.aborted) return;
      if (cause instanceof PlantStoreError) throw cause;
      failures++;
      wait = {
        error: fail({ status: 0, reason: failureReason(cause), cause }),
        delayMs: backoff(reconnectMs, failures, maxReconnectMs),
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

/** The stream's text through its guard; an event too large for it ends the stream with a PlantStoreError. */
function guarded(
  guard: (text: string) => string,
  text: string,
  fail: (init: { status: number; reason: string }) => PlantStoreError,
): string {
  try {
    return guard(text);
  } catch (error) {
    if (error instanceof EventTooLargeError) throw fail({ status: 200, reason: error.message });
    throw error;
  }
}

/** `base` doubled per failure in a row (the first waits `base`), at most `max`. */
function backoff(base: number, failures: number, max: number): number {
  return Math.min(base * 2 ** Math.max(0, failures - 1), max);
}

/** Resolves after `ms`, or at once when `signal` aborts (or has: `onReconnect` may abort it). */
function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  if (signal?.aborted) return Promise.resolve();
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
