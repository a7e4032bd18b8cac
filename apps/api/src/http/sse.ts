import type { ServerResponse } from 'node:http';
import { stringifyJson } from '@plant-store/schema';
import type { Context } from 'koa';
import type { EventStream } from '../events/hub.ts';
import { toPlantEvent } from '../operations/events.ts';
import type { StoredEvent } from '../store/store.ts';

/** What EventSource waits before reconnecting after the stream ends (the `retry:` field). */
const RECONNECT_MS = 1_000;

const HEARTBEAT = Buffer.from(': heartbeat\n\n');

/**
 * Answers `stream` as Server-Sent Events: `id:`, `event:` and `data:` (exact int64 JSON) per event,
 * a `: heartbeat` comment after `heartbeatMs` without a write. The backlog is written page by page
 * as the socket drains; live events are written as the hub hands them out, all that waits in one
 * write, and only while the socket is not backed up: otherwise they stay in the hub's bounded
 * buffer, where overflowing it cuts the connection (the client resumes by id). A shutdown ends the
 * stream cleanly: EventSource reconnects by itself.
 *
 * Written to the response directly (Koa does not respond): at 1,000 streams × 1,000 events/s the
 * per-write cost of a Readable, a generator and a timer per event is what saturated the instance.
 */
export function serveEventStream(ctx: Context, stream: EventStream, heartbeatMs: number): void {
  ctx.status = 200;
  ctx.set({ 'Cache-Control': 'no-cache', 'X-Accel-Buffering': 'no' });
  ctx.type = 'text/event-stream; charset=utf-8';
  ctx.respond = false;
  const res = ctx.res;
  ctx.req.socket.setNoDelay(true);
  ctx.req.socket.setTimeout(0);

  // One timer per stream, pushed back by each write (`refresh`), not one per event.
  const heartbeat = setTimeout(() => write(HEARTBEAT), heartbeatMs);
  /** False when the socket is backed up (or gone): wait for 'drain'. */
  const write = (chunk: Buffer | string): boolean => {
    if (res.writableEnded || res.destroyed) return false;
    heartbeat.refresh();
    return res.write(chunk);
  };
  let live = false;
  const writeWaiting = (): void => {
    if (!live || res.writableNeedDrain || res.destroyed) return;
    const events = stream.drain();
    if (events.length > 0) write(frames(events));
  };

  res.once('close', () => {
    clearTimeout(heartbeat);
    stream.close();
  });
  res.on('drain', writeWaiting);
  stream.onLive(writeWaiting);
  void stream.ended.then((reason) => {
    clearTimeout(heartbeat);
    if (reason === 'overflow') res.destroy();
    else if (reason === 'shutdown') res.end();
  });

  write(`retry: ${RECONNECT_MS}\n\n`);
  void (async () => {
    for await (const page of stream.backlog()) {
      if (write(frames(page))) continue;
      if (res.writableEnded || res.destroyed) return;
      await drained(res);
    }
    live = true;
    writeWaiting();
  })().catch(() => res.destroy());
}

/** Resolves when `res` has room again, or has closed (then writes are no-ops). */
function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

/**
 * The frames of a run of events, built once per instance however many streams send it: the hub
 * hands every stream that keeps up the same array, and every stream the same event objects.
 */
const framedRuns = new WeakMap<readonly StoredEvent[], Buffer>();
const framedEvents = new WeakMap<StoredEvent, string>();

function frames(events: readonly StoredEvent[]): Buffer {
  let bytes = framedRuns.get(events);
  if (bytes === undefined) {
    let text = '';
    for (const event of events) text += frame(event);
    bytes = Buffer.from(text);
    framedRuns.set(events, bytes);
  }
  return bytes;
}

function frame(event: StoredEvent): string {
  let text = framedEvents.get(event);
  if (text === undefined) {
    text = `id: ${event.id}\nevent: ${event.type}\ndata: ${stringifyJson(toPlantEvent(event))}\n\n`;
    framedEvents.set(event, text);
  }
  return text;
}
