import { Readable } from 'node:stream';
import { stringifyJson } from '@plant-store/schema';
import type { Context } from 'koa';
import type { EventStream } from '../events/hub.ts';
import { toPlantEvent } from '../operations/events.ts';
import type { StoredEvent } from '../store/store.ts';

/** What EventSource waits before reconnecting after the stream ends (the `retry:` field). */
const RECONNECT_MS = 1_000;

/**
 * Answers `stream` as Server-Sent Events: `id:`, `event:` and `data:` (exact int64 JSON) per event,
 * a `: heartbeat` comment after `heartbeatMs` without one. Written as the socket drains, so a slow
 * reader leaves events in the hub's bounded buffer, where overflowing it cuts the connection (the
 * client resumes by id). A shutdown ends the stream cleanly: EventSource reconnects by itself.
 */
export function serveEventStream(ctx: Context, stream: EventStream, heartbeatMs: number): void {
  ctx.status = 200;
  ctx.set({ 'Cache-Control': 'no-cache', 'X-Accel-Buffering': 'no' });
  ctx.type = 'text/event-stream; charset=utf-8';
  ctx.req.socket.setNoDelay(true);
  ctx.req.socket.setTimeout(0);
  ctx.res.once('close', () => stream.close());
  void stream.ended.then((reason) => {
    if (reason === 'overflow') ctx.res.destroy();
  });
  ctx.body = Readable.from(frames(stream, heartbeatMs), { objectMode: false });
}

async function* frames(stream: EventStream, heartbeatMs: number): AsyncGenerator<string> {
  yield `retry: ${RECONNECT_MS}\n\n`;
  const events = stream[Symbol.asyncIterator]();
  let next = events.next();
  while (true) {
    let timer: NodeJS.Timeout | undefined;
    const beat = new Promise<'beat'>((resolve) => {
      timer = setTimeout(() => resolve('beat'), heartbeatMs);
    });
    const result = await Promise.race([next, beat]);
    clearTimeout(timer);
    if (result === 'beat') {
      yield ': heartbeat\n\n';
      continue;
    }
    if (result.done) return;
    // This event and every one that piled up behind it, in one write.
    let text = frame(result.value);
    for (const event of stream.drain()) text += frame(event);
    yield text;
    next = events.next();
  }
}

/**
 * Each event's frame, written once per instance however many streams send it: the hub hands every
 * live stream the same event object.
 */
const framed = new WeakMap<StoredEvent, string>();

function frame(event: StoredEvent): string {
  let text = framed.get(event);
  if (text === undefined) {
    text = `id: ${event.id}\nevent: ${event.type}\ndata: ${stringifyJson(toPlantEvent(event))}\n\n`;
    framed.set(event, text);
  }
  return text;
}
