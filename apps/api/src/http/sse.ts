import type { Socket } from 'node:net';
import type { Context } from 'koa';
import {
  type EventStream,
  OVERFLOW_GRACE_MS,
  OVERFLOW_MESSAGE,
  type StreamEnd,
} from '../events/event-stream.ts';
import { toPlantEvent } from '../operations/events.ts';
import type { StoredEvent } from '../store/contract.ts';
import { writeJson } from './json-writer.ts';

/** What EventSource waits before reconnecting after the stream ends (the `retry:` field). */
const RECONNECT_MS = 1_000;

/**
 * How a transport writes an event stream: its headers, first bytes, heartbeat, the frames of a run
 * of events (as one HTTP chunk, made once per run: see `framer`) and what a stream that ended for
 * `reason` writes last before its response ends, or `cut` to cut the connection instead.
 */
export type StreamFormat = {
  headers: Record<string, string>;
  opening: Buffer;
  heartbeat: Buffer;
  frames(events: readonly StoredEvent[]): Buffer;
  ending(reason: Exclude<StreamEnd, 'closed'>): Buffer | 'cut' | undefined;
};

/**
 * Server-Sent Events as `GET /plants/events` writes them: `id:`, `event:` and `data:` (exact int64
 * JSON) per event, a `: heartbeat` comment when idle. A consumer too slow for its events gets an
 * `error` event saying so (`too_slow`). A shutdown, or the hub giving the stream's place to another
 * token's (see `EventHubLimits.maxStreams`), ends the stream cleanly: EventSource reconnects by
 * itself and resumes by id. A revoked token's stream ends after a comment saying so; EventSource's
 * reconnection then gets 401.
 */
export const SSE_FORMAT: StreamFormat = {
  headers: {
    'Content-Type': 'text/event-stream; charset=utf-8',
    'Cache-Control': 'no-cache',
    'X-Accel-Buffering': 'no',
  },
  opening: chunk(`retry: ${RECONNECT_MS}\n\n`),
  heartbeat: chunk(': heartbeat\n\n'),
  frames: framer(
    (event) => `id: ${event.id}\nevent: ${event.type}\ndata: ${writeJson(toPlantEvent(event))}\n\n`,
  ),
  ending: (reason) => ENDINGS[reason],
};

const ENDINGS: Record<Exclude<StreamEnd, 'closed'>, Buffer | undefined> = {
  overflow: chunk(
    `event: error\ndata: ${JSON.stringify({ error: 'too_slow', message: OVERFLOW_MESSAGE })}\n\n`,
  ),
  shutdown: undefined,
  displaced: chunk(
    ": closed: this instance's streams are shared between tokens, and this token held the most; reconnect to resume\n\n",
  ),
  revoked: chunk(': closed: the token was revoked\n\n'),
};

/**
 * Answers `stream` in `format` (`SSE_FORMAT`, or a tRPC subscription's), a heartbeat after
 * `heartbeatMs` without a write. The backlog is written page by page as the socket drains; live
 * events are written as the hub hands them out, all that waits in one write, and only while the
 * socket is not backed up: otherwise they stay in the hub's bounded buffer, where overflowing it
 * ends the stream (`overflow`), the connection cut if its last bytes are not read within
 * OVERFLOW_GRACE_MS (the client resumes by id).
 *
 * Written to the socket directly (Koa does not respond), as ready-made HTTP chunks shared by every
 * stream: at 1,000 streams × 1,000 events/s the per-write cost of a Readable, a generator and a
 * timer per event is what saturated the instance, and the write system call is most of what is left.
 * It goes around `res.write` by the rule of docs/architecture.md (Going around a library);
 * test/in-process/sse-raw-chunks.test.ts fails if node:http changes under it.
 */
export function serveEventStream(
  ctx: Context,
  stream: EventStream,
  format: StreamFormat,
  heartbeatMs: number,
): void {
  ctx.status = 200;
  ctx.set(format.headers);
  ctx.respond = false;
  const { res } = ctx;
  const { socket } = ctx.req;
  // The client went while the stream was being opened: its 'close' came before anyone listened.
  if (socket.destroyed) {
    stream.close();
    return;
  }
  socket.setNoDelay(true);
  socket.setTimeout(0);
  // The status line and headers now; the body then goes to the socket as ready-made HTTP chunks,
  // one write each, without the response's own chunking (a cork, a tick and three buffers per
  // write). `res.end()` still writes the last chunk.
  res.flushHeaders();
  // An HTTP/1.0 client gets no chunked encoding: the body is then the chunks' contents.
  const body = res.chunkedEncoding ? (bytes: Buffer) => bytes : contentOf;

  // One timer per stream, pushed back by each write (`refresh`), not one per event.
  const heartbeat = setTimeout(() => write(format.heartbeat), heartbeatMs);
  /** False when the socket is backed up (or gone): wait for 'drain'. */
  const write = (chunk: Buffer): boolean => {
    if (res.writableEnded || socket.destroyed) return false;
    heartbeat.refresh();
    return socket.write(body(chunk));
  };
  let live = false;
  const writeWaiting = (): void => {
    if (!live || socket.writableNeedDrain || socket.destroyed) return;
    const runs = stream.drainRuns();
    if (runs.length === 0) return;
    // Every run waiting, in one system call (writev): the runs' bytes are shared between streams.
    socket.cork();
    for (const run of runs) write(format.frames(run));
    socket.uncork();
  };

  streamsOpen++;
  res.once('close', () => {
    streamsOpen--;
    clearTimeout(heartbeat);
    socket.off('drain', writeWaiting);
    stream.close();
  });
  socket.on('drain', writeWaiting);
  stream.onLive(() => coalesce(writeWaiting));
  void stream.ended.then((reason) => {
    clearTimeout(heartbeat);
    socket.off('drain', writeWaiting);
    if (reason === 'closed') return;
    const last = format.ending(reason);
    if (last === 'cut') return void socket.destroy();
    // Behind what the socket holds already: the consumer reads it once it gets there.
    if (last !== undefined && !socket.destroyed) socket.write(body(last));
    res.end();
    // One too slow for its events is cut if it does not get there in time.
    if (reason === 'overflow') setTimeout(() => socket.destroy(), OVERFLOW_GRACE_MS).unref();
  });

  write(format.opening);
  void (async () => {
    for await (const page of stream.backlog()) {
      if (write(format.frames(page))) continue;
      if (res.writableEnded || socket.destroyed) return;
      await drained(socket);
    }
    live = true;
    writeWaiting();
  })().catch(() => socket.destroy());
}

/**
 * Live events are written for every stream at once, at most every (streams ÷ 100) ms, up to 100 ms:
 * at 10,000 streams a write per stream per event was what saturated the instance (issue 42), where
 * one write a flush carries all the events of that interval. A few streams are written at once;
 * many, `WRITES_PER_TURN` a turn of the event loop.
 */
let streamsOpen = 0;
const due = new Set<() => void>();
let flushing = false;
function coalesce(flush: () => void): void {
  due.add(flush);
  if (flushing) return;
  flushing = true;
  setTimeout(
    () => {
      flushing = false;
      const flushes = [...due];
      due.clear();
      writeInSlices(flushes, 0);
    },
    Math.min(100, Math.floor(streamsOpen / 100)),
  );
}

/**
 * Streams written per turn of the event loop: at 10,000 streams a flush is about 60 ms of writes,
 * which in one piece held every request, commit and read of the log back behind it.
 */
const WRITES_PER_TURN = 500;
export function writeInSlices(flushes: (() => void)[], from: number): void {
  const to = Math.min(flushes.length, from + WRITES_PER_TURN);
  for (let i = from; i < to; i++) flushes[i]!();
  if (to < flushes.length) setImmediate(writeInSlices, flushes, to);
}

/** Resolves when `socket` has room again, or has closed (then writes are no-ops). */
function drained(socket: Socket): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      socket.off('drain', done);
      socket.off('close', done);
      resolve();
    };
    socket.on('drain', done);
    socket.on('close', done);
  });
}

/** `text` as one HTTP/1.1 chunk (the response is `Transfer-Encoding: chunked`). */
export function chunk(text: string): Buffer {
  return Buffer.from(`${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`);
}

/** What an HTTP chunk made by `chunk` carries. */
function contentOf(bytes: Buffer): Buffer {
  return bytes.subarray(bytes.indexOf('\r\n') + 2, bytes.length - 2);
}

/**
 * The frames of a run of events as one chunk, `frame` applied once per event and the chunk built
 * once per run however many streams send it: the hub hands every stream that keeps up the same
 * array, and every stream the same event objects.
 */
export function framer(frame: (event: StoredEvent) => string): (events: readonly StoredEvent[]) => Buffer {
  const framedRuns = new WeakMap<readonly StoredEvent[], Buffer>();
  const framedEvents = new WeakMap<StoredEvent, string>();
  return (events) => {
    let bytes = framedRuns.get(events);
    if (bytes === undefined) {
      let text = '';
      for (const event of events) {
        let framed = framedEvents.get(event);
        if (framed === undefined) {
          framed = frame(event);
          framedEvents.set(event, framed);
        }
        text += framed;
      }
      bytes = chunk(text);
      framedRuns.set(events, bytes);
    }
    return bytes;
  };
}
