import { parseJson } from '@plant-store/schema';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { TOKEN } from './http.ts';

export type SseEvent = { id: string; event: string; data: unknown };

/**
 * A raw Server-Sent Events reader over fetch, for tests: every event (its `data` parsed exactly)
 * and every comment, as they arrive. Nothing reconnects by itself.
 */
export type SseStream = {
  status: number;
  headers: Headers;
  /** The events received so far. */
  events: SseEvent[];
  /** The comments received so far (`heartbeat`). */
  comments: string[];
  /** Resolves once `count` events have arrived (rejects after `timeoutMs`). */
  waitFor(count: number, timeoutMs?: number): Promise<SseEvent[]>;
  /** Resolves with how the stream ended: 'end' (the server ended it) or 'error' (cut). */
  ended: Promise<'end' | 'error'>;
  /** Stops reading: with `pause` the body is left unread (the socket fills up), else it is closed. */
  close(): void;
  /** Error body, when the status is not 200. */
  body?: unknown;
};

export async function openSse(
  url: string,
  headers: Record<string, string> = {},
  options: { paused?: Promise<void> } = {},
): Promise<SseStream> {
  const controller = new AbortController();
  const response = await fetch(url, {
    headers: { authorization: `Bearer ${TOKEN}`, ...headers },
    signal: controller.signal,
  });
  const events: SseEvent[] = [];
  const comments: string[] = [];
  const waiters: (() => void)[] = [];
  const stream = {
    status: response.status,
    headers: response.headers,
    events,
    comments,
    close: () => controller.abort(),
  } as SseStream;
  if (response.status !== 200) {
    stream.body = JSON.parse(await response.text());
    stream.ended = Promise.resolve('end');
    stream.waitFor = () => Promise.reject(new Error(`status ${response.status}`));
    return stream;
  }
  const parser = createParser({
    onEvent(message: EventSourceMessage) {
      events.push({ id: message.id ?? '', event: message.event ?? 'message', data: parseJson(message.data) });
      for (const wake of waiters.splice(0)) wake();
    },
    onComment(comment) {
      comments.push(comment.trim());
      for (const wake of waiters.splice(0)) wake();
    },
  });
  stream.ended = (async () => {
    await options.paused;
    const decoder = new TextDecoder();
    try {
      for await (const chunk of response.body!) parser.feed(decoder.decode(chunk, { stream: true }));
      return 'end' as const;
    } catch {
      return 'error' as const;
    } finally {
      for (const wake of waiters.splice(0)) wake();
    }
  })();
  let done = false;
  void stream.ended.then(() => {
    done = true;
  });
  stream.waitFor = async (count, timeoutMs = 5_000) => {
    const deadline = Date.now() + timeoutMs;
    while (events.length < count) {
      if (done) throw new Error(`the stream ended after ${events.length} of ${count} events`);
      if (Date.now() > deadline)
        throw new Error(`only ${events.length} of ${count} events within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        waiters.push(resolve);
        setTimeout(resolve, 50);
      });
    }
    return events.slice(0, count);
  };
  return stream;
}
