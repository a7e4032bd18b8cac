import { ROOT_CONTEXT, type Tracer } from '@opentelemetry/api';
import type { Logger } from 'pino';
import { describeCauses } from '../causes.ts';
import { RequestError } from '../errors.ts';
import type { EventLog, StoredEvent } from '../store/contract.ts';
import {
  EVENT_TYPES,
  type EventHub,
  type EventHubLimits,
  type EventStream,
  type EventType,
  PAGE,
  type StreamEnd,
} from './event-stream.ts';
import { refuseResume } from './resume.ts';

export type { EventHub, EventHubLimits, EventStream, EventType, StreamEnd } from './event-stream.ts';

/**
 * The live streams that ask for the same types of event. A page of new events is filtered once per
 * group, and handed (the same array) to each stream of a group it has events for: a group it has
 * none for costs nothing per stream.
 */
type Group = {
  /** `undefined`: every type. */
  types: ReadonlySet<EventType> | undefined;
  live: Set<Subscriber>;
};

type Subscriber = {
  tokenName: string;
  group: Group;
  /**
   * How far this stream has followed the log: every event up to here it has taken (from the log or
   * from the hub) or, reading its backlog, passed as not of its types. The hub hands it only events
   * after it.
   */
  cursor: bigint;
  /**
   * The live events waiting for the consumer, as the pages the hub read: while a stream keeps up,
   * its queue is one page shared with every other stream that keeps up.
   */
  pages: (readonly StoredEvent[])[];
  /** Events in `pages`: the bounded buffer (EVENT_STREAM_BUFFER) is counted in events. */
  waiting: number;
  wake: (() => void) | undefined;
  listener: (() => void) | undefined;
  end: (reason: StreamEnd) => void;
  done: StreamEnd | undefined;
};

/**
 * Fans the event log out to the streams of this instance. One reader follows the log (woken by the
 * store's `watch` and every `pollMs`) and hands each new event to every live stream that asks for
 * its type; a stream that resumes from an older id reads its backlog from the log itself, then
 * joins the live ones. The log is the only source: a missed notification delays an event by at
 * most `pollMs`, never loses it. With a `tracer`, each page handed to live streams is one span,
 * `events fan-out`, with how many events and streams it took.
 */
export function createEventHub(
  events: EventLog,
  limits: EventHubLimits,
  log: Logger,
  tracer?: Tracer,
): EventHub {
  /** The live streams by the types they ask for (the names, joined): one group per subset of the types. */
  const groups = new Map<string, Group>();
  const open = new Set<Subscriber>();
  /** Each token's open streams, oldest first. */
  const byToken = new Map<string, Set<Subscriber>>();
  /** Every event up to `head` has been handed to the live streams. */
  let head: bigint | undefined;
  let starting: Promise<void> | undefined;
  let reading: Promise<void> | undefined;
  let again = false;
  let closed = false;
  let stopWatching: (() => void) | undefined;
  let poll: NodeJS.Timeout | undefined;

  function start(): Promise<void> {
    starting ??= (async () => {
      stopWatching = events.watch(wake);
      poll = setInterval(wake, limits.pollMs).unref();
      head = await events.head();
    })().catch((error: unknown) => {
      stop();
      throw error;
    });
    return starting;
  }

  /** With no stream open, nothing follows the log. */
  function stop(): void {
    stopWatching?.();
    clearInterval(poll);
    stopWatching = undefined;
    starting = undefined;
    head = undefined;
  }

  function wake(): void {
    if (head === undefined) return;
    if (reading) {
      again = true;
      return;
    }
    reading = (async () => {
      do {
        again = false;
        let page: StoredEvent[];
        do {
          if (head === undefined) return;
          page = await events.after(head, PAGE);
          if (page.length === 0) break;
          fanOut(page);
          head = page.at(-1)!.id;
        } while (page.length === PAGE);
      } while (again);
    })()
      .catch((error: unknown) => log.warn({ reason: describeCauses(error) }, 'event log unreadable'))
      .finally(() => {
        reading = undefined;
        if (open.size === 0) stop();
      });
  }

  /** Hands a page of new events to every live stream that asks for some of them. */
  function fanOut(page: readonly StoredEvent[]): void {
    const span = tracer?.startSpan(
      'events fan-out',
      { attributes: { 'plant_store.events.count': page.length } },
      ROOT_CONTEXT,
    );
    let streams = 0;
    for (const group of groups.values()) {
      if (group.live.size === 0) continue;
      const mine = only(group.types, page);
      if (mine.length === 0) continue;
      for (const subscriber of group.live) push(subscriber, mine);
      streams += group.live.size;
    }
    span?.setAttribute('plant_store.streams.count', streams);
    span?.end();
  }

  /** Hands a page of new events to one live stream: the part it has not taken yet, at once. */
  function push(subscriber: Subscriber, page: readonly StoredEvent[]): void {
    let from = 0;
    while (from < page.length && page[from]!.id <= subscriber.cursor) from++;
    if (from === page.length) return;
    const fresh = from === 0 ? page : page.slice(from);
    if (subscriber.waiting + fresh.length > limits.buffer) {
      subscriber.end('overflow');
      return;
    }
    subscriber.pages.push(fresh);
    subscriber.waiting += fresh.length;
    subscriber.cursor = fresh.at(-1)!.id;
    subscriber.wake?.();
    subscriber.listener?.();
  }

  /** The live events waiting for a stream, taken: the shared page itself when there is one. */
  function take(subscriber: Subscriber): readonly StoredEvent[] {
    const pages = takeRuns(subscriber);
    return pages.length === 1 ? pages[0]! : pages.flat();
  }

  function takeRuns(subscriber: Subscriber): readonly (readonly StoredEvent[])[] {
    if (subscriber.done || subscriber.waiting === 0) return [];
    const { pages } = subscriber;
    subscriber.pages = [];
    subscriber.waiting = 0;
    return pages;
  }

  /** The group of the streams asking for `types`, made on first use. */
  function groupOf(types: readonly EventType[] | undefined): Group {
    const wanted = types === undefined ? EVENT_TYPES : EVENT_TYPES.filter((type) => types.includes(type));
    const key = wanted.join(',');
    let group = groups.get(key);
    if (group === undefined) {
      const every = wanted.length === EVENT_TYPES.length;
      group = { types: every ? undefined : new Set(wanted), live: new Set() };
      groups.set(key, group);
    }
    return group;
  }

  /**
   * Whether `tokenName` may open one more stream, and which stream gives it its place: throws 503
   * (shutting down, or full with no token holding two more than this one), 429 (its own limit).
   * When the instance is full, the oldest stream of the largest holder makes room, if that holder
   * has at least two more than this token: so while the instance is full, every token of the k
   * holding streams can hold at least floor(maxStreams / k) (some holder has at least two more
   * than any token below that share), and no two tokens take places back and forth.
   */
  function admit(tokenName: string): Subscriber | undefined {
    if (closed) throw new RequestError('busy', 'This instance is shutting down; reconnect to another.');
    const mine = byToken.get(tokenName)?.size ?? 0;
    if (mine >= limits.maxStreamsPerToken) {
      throw new RequestError(
        'rate_limited',
        `This token has ${limits.maxStreamsPerToken} event streams open already; close one first.`,
        { headers: { 'Retry-After': '1' } },
      );
    }
    if (open.size < limits.maxStreams) return undefined;
    let largest: Set<Subscriber> | undefined;
    for (const streams of byToken.values()) if (streams.size > (largest?.size ?? 0)) largest = streams;
    if (largest === undefined || largest.size < mine + 2) {
      throw new RequestError(
        'busy',
        `This instance serves ${limits.maxStreams} event streams already; retry in a second.`,
      );
    }
    return largest.values().next().value;
  }

  async function openStream({
    tokenName,
    after,
    types,
  }: {
    tokenName: string;
    after?: bigint;
    types?: readonly EventType[];
  }): Promise<EventStream> {
    // Refused before any store call; decided again below, after them.
    admit(tokenName);
    if (after !== undefined) await refuseResume(events, limits.maxReplay, after);
    await start();
    const displaced = admit(tokenName);
    let resolveEnded: (reason: StreamEnd) => void = () => {};
    const ended = new Promise<StreamEnd>((resolve) => {
      resolveEnded = resolve;
    });
    const subscriber: Subscriber = {
      tokenName,
      group: groupOf(types),
      cursor: after ?? head!,
      pages: [],
      waiting: 0,
      wake: undefined,
      listener: undefined,
      done: undefined,
      end(reason) {
        if (subscriber.done) return;
        subscriber.done = reason;
        if (reason === 'overflow')
          log.info({ token: tokenName, buffer: limits.buffer }, 'event stream cut: its consumer fell behind');
        subscriber.group.live.delete(subscriber);
        open.delete(subscriber);
        const mine = byToken.get(tokenName);
        mine?.delete(subscriber);
        if (mine?.size === 0) byToken.delete(tokenName);
        if (open.size === 0 && !reading) stop();
        subscriber.pages = [];
        subscriber.waiting = 0;
        subscriber.wake?.();
        subscriber.listener?.();
        resolveEnded(reason);
      },
    };
    open.add(subscriber);
    const mine = byToken.get(tokenName) ?? new Set<Subscriber>();
    byToken.set(tokenName, mine.add(subscriber));
    // Only now, so the hub never finds itself without streams (and stops following the log).
    displaced?.end('displaced');
    return {
      ended,
      close: () => subscriber.end('closed'),
      drain: () => take(subscriber),
      drainRuns: () => takeRuns(subscriber),
      backlog: () => backlog(subscriber),
      onLive(listener) {
        subscriber.listener = listener;
      },
      [Symbol.asyncIterator]: () => iterate(subscriber),
    };
  }

  /**
   * The backlog, from the log, until this stream has seen everything the hub has handed out; then,
   * in the same synchronous step, it joins the live streams: no event falls in between. A filtered
   * stream reads the log as any other and yields only its types: its cursor passes the rest.
   */
  async function* backlog(subscriber: Subscriber): AsyncGenerator<readonly StoredEvent[]> {
    const { live, types } = subscriber.group;
    while (!subscriber.done && !live.has(subscriber)) {
      if (head !== undefined && subscriber.cursor >= head) {
        live.add(subscriber);
        return;
      }
      const page = await events.after(subscriber.cursor, PAGE);
      if (subscriber.done) return;
      if (page.length > 0) {
        subscriber.cursor = page.at(-1)!.id;
        const mine = only(types, page);
        if (mine.length > 0) yield mine;
      }
      // The log ends here for now: wait for the hub to catch up to it (or pass it).
      if (page.length < PAGE && head !== undefined && subscriber.cursor > head) {
        live.add(subscriber);
        return;
      }
    }
  }

  async function* iterate(subscriber: Subscriber): AsyncGenerator<StoredEvent> {
    try {
      for await (const page of backlog(subscriber)) {
        for (const event of page) {
          if (subscriber.done) return;
          yield event;
        }
      }
      while (!subscriber.done) {
        const waiting = take(subscriber);
        for (const event of waiting) {
          if (subscriber.done) return;
          yield event;
        }
        if (waiting.length > 0) continue;
        await new Promise<void>((resolve) => {
          subscriber.wake = resolve;
        });
        subscriber.wake = undefined;
      }
    } finally {
      subscriber.end('closed');
    }
  }

  return {
    open: openStream,
    get size() {
      return open.size;
    },
    retain(keep) {
      // Asked once per token with streams open, not once per stream.
      for (const [tokenName, streams] of [...byToken]) {
        if (!keep(tokenName)) for (const subscriber of [...streams]) subscriber.end('revoked');
      }
    },
    close() {
      closed = true;
      for (const subscriber of [...open]) subscriber.end('shutdown');
      stop();
    },
  };
}

/** The events of `page` of one of `types` (all of them when `types` is undefined: the page itself). */
function only(
  types: ReadonlySet<EventType> | undefined,
  page: readonly StoredEvent[],
): readonly StoredEvent[] {
  return types === undefined ? page : page.filter((event) => types.has(event.type));
}
