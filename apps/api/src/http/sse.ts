import { Readable } from 'node:stream';
import { stringifyJson } from '@plant-store/schema';
import type { Context } from 'koa';
import type { EventStream } from '../events/hub.ts';
import { toPlantEvent } from '../operations/events.ts';

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
    const event = result.value;
    yield `id: ${event.id}\nevent: ${event.type}\ndata: ${stringifyJson(toPlantEvent(event))}\n\n`;
    next = events.next();
  }
}
