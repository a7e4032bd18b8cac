/**
 * The most characters of one Server-Sent Event (its lines up to the blank line that ends it) a
 * client holds: an api event is a plant of at most a few KiB.
 */
export const MAX_EVENT_CHARS = 1024 * 1024;

/** The event stream sent more than an event may hold. */
export class EventTooLargeError extends Error {}

/**
 * A filter for the text of an event stream, in front of its parser, against a server that would
 * make it hold or wait without end:
 * - it throws {@link EventTooLargeError} once one event passes `maxEventChars`: a parser keeps
 *   every line of an event until the blank line that ends it;
 * - it lowers a `retry:` field above `maxRetryMs` to `maxRetryMs`: the parser's reconnection
 *   delay would otherwise be whatever the server says (`retry: 999999999` is 11 days).
 *
 * Complete lines pass at once; an incomplete last line waits for its end.
 */
export function eventStreamGuard({
  maxRetryMs,
  maxEventChars = MAX_EVENT_CHARS,
}: {
  maxRetryMs: number;
  maxEventChars?: number;
}): (text: string) => string {
  /** The incomplete last line. */
  let held = '';
  /** Characters of the complete lines of the event being read. */
  let event = 0;
  /** The text so far ends with CR: an LF next is the end of that same line (CRLF), not a blank line. */
  let afterCr = false;
  return (text) => {
    if (text === '') return '';
    let rest = text;
    let out = '';
    if (afterCr && rest.startsWith('\n')) {
      out = '\n';
      rest = rest.slice(1);
    }
    afterCr = rest.endsWith('\r');
    // [line, end, line, end, …, incomplete line]
    const parts = rest.split(/(\r\n|\r|\n)/);
    let line = held + parts[0]!;
    for (let i = 1; i < parts.length; i += 2) {
      const end = parts[i]!;
      event = line === '' ? 0 : event + line.length + end.length;
      if (event > maxEventChars) throw tooLarge(maxEventChars);
      out += retryAtMost(line, maxRetryMs) + end;
      line = parts[i + 1]!;
    }
    held = line;
    if (event + held.length > maxEventChars) throw tooLarge(maxEventChars);
    return out;
  };
}

function retryAtMost(line: string, maxMs: number): string {
  const ms = /^retry: ?([0-9]+)$/.exec(line)?.[1];
  return ms !== undefined && Number(ms) > maxMs ? `retry: ${maxMs}` : line;
}

function tooLarge(maxEventChars: number): EventTooLargeError {
  return new EventTooLargeError(`an event is longer than ${maxEventChars} characters`);
}

/**
 * `response` with its event stream read through an {@link eventStreamGuard}: for EventSource's
 * `fetch`, whose parser the guard must stand in front of. Any other answer is left as it is.
 */
export function guardEventStream(response: Response, maxRetryMs: number): Response {
  const type = response.headers.get('content-type') ?? '';
  if (!response.ok || response.body === null || !type.startsWith('text/event-stream')) return response;
  const guard = eventStreamGuard({ maxRetryMs });
  const body = response.body
    .pipeThrough(new TextDecoderStream())
    .pipeThrough(
      new TransformStream<string, string>({
        transform(text, controller) {
          controller.enqueue(guard(text));
        },
      }),
    )
    .pipeThrough(new TextEncoderStream());
  const { status, statusText, headers } = response;
  return new Response(body, { status, statusText, headers });
}
