import { PLANT_EVENT_TYPES, type PlantEventType } from '@plant-store/schema';
import type { StoredEvent } from '../store/contract.ts';

/** A type of event a stream may ask for (`?types=`). */
export type EventType = PlantEventType;
/** Every type of event: a stream that asks for all of them is not filtered. */
export const EVENT_TYPES: readonly EventType[] = PLANT_EVENT_TYPES;

/** Events read from the log per query, when catching up and when fanning out. */
export const PAGE = 500;

export type EventHubLimits = {
  /**
   * Streams open at once on this instance (EVENT_STREAMS_MAX), shared fairly between tokens: when
   * it is full, a token's new stream ends the oldest of a token holding at least two more (see
   * `admit`), else 503 with Retry-After.
   */
  maxStreams: number;
  /** Streams open at once per token (EVENT_STREAMS_PER_TOKEN); past it 429 with Retry-After. */
  maxStreamsPerToken: number;
  /** Events a stream may hold for a consumer that is not reading (EVENT_STREAM_BUFFER); past it the stream is cut. */
  buffer: number;
  /** How often the log is read even without a notification (EVENTS_POLL_MS): the bound on a missed one. */
  pollMs: number;
  /** Most events a resuming stream may replay (EVENTS_REPLAY_MAX); from further back, 410. */
  maxReplay: number;
};

/**
 * Why a stream ended: the consumer stopped, it fell too far behind, the instance is shutting down,
 * it gave its place to another token's stream (the instance was full; see `admit`), or its token is
 * no longer active (see `EventHub.retain`).
 */
export type StreamEnd = 'closed' | 'overflow' | 'shutdown' | 'displaced' | 'revoked';

/** One consumer's events, in id order, without gaps or repeats; see `EventHub.open`. */
export type EventStream = AsyncIterable<StoredEvent> & {
  /** Ends the stream (the consumer went away); the iterator returns. */
  close(): void;
  /** Resolves with why the stream ended. */
  readonly ended: Promise<StreamEnd>;
  /**
   * Takes the live events already waiting for this stream, in order, as if the iterator had
   * yielded them (it goes on after the last one). Lets a writer send what piled up while it was
   * busy as one write. Empty while the stream reads its backlog or when nothing is waiting.
   * Read-only: streams that were caught up get the very same array, so a writer can serialise it
   * once for all of them.
   */
  drain(): readonly StoredEvent[];
  /**
   * What `drain` takes, as the runs the hub handed out: each run the same array for every stream
   * that kept up, so a writer can write each one's bytes, made once, to every socket.
   */
  drainRuns(): readonly (readonly StoredEvent[])[];
  /**
   * The backlog, read from the log page by page, for a writer that does not use the iterator:
   * ends once the stream has joined the live ones (then `onLive` and `drain` take over). An empty
   * iteration when the stream started live.
   */
  backlog(): AsyncIterable<readonly StoredEvent[]>;
  /**
   * Calls `listener` synchronously each time the hub hands this stream live events (take them
   * with `drain`), and once when it ends: one call per fan-out, not per event, and no promise.
   */
  onLive(listener: () => void): void;
};

export type EventHub = {
  /**
   * Opens a stream of the events after `after` (or, without it, of those committed from now on):
   * first the backlog, read from the log, then live events as they commit; only those of `types`
   * when given (their ids stay the log's, with gaps between them). Throws a `RequestError` when
   * `after` is older than the retention, more than `maxReplay` events back or past the store's
   * newest event (410), or a limit is reached (429, 503).
   */
  open(options: { tokenName: string; after?: bigint; types?: readonly EventType[] }): Promise<EventStream>;
  /** Streams open now. */
  readonly size: number;
  /** Ends ('revoked') every stream whose token `keep` refuses: called after each token reload. */
  retain(keep: (tokenName: string) => boolean): void;
  /** Ends every stream ('shutdown') and refuses new ones. */
  close(): void;
};

/** Why a stream too slow for its events ('overflow') was closed, as both transports tell its consumer. */
export const OVERFLOW_MESSAGE =
  'This stream fell more than EVENT_STREAM_BUFFER events behind its consumer and was closed; reconnect with the last event id to resume.';
/** How long a stream closed as too slow may take to read its last bytes before its connection is cut. */
export const OVERFLOW_GRACE_MS = 10_000;
