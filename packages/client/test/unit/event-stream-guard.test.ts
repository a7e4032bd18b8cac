import { describe, expect, it } from 'vitest';
import { EventTooLargeError, eventStreamGuard } from '../../src/event-stream-guard.ts';

/** The guard's output for `text` fed in pieces cut at `cuts`. */
function feed(text: string, cuts: number[], options = { maxRetryMs: 30_000, maxEventChars: 100 }) {
  const guard = eventStreamGuard(options);
  const bounds = [0, ...cuts, text.length];
  return bounds
    .slice(1)
    .map((end, i) => guard(text.slice(bounds[i], end)))
    .join('');
}

/** Every way to cut `text` in two. */
const everyCut = (text: string) => Array.from({ length: text.length + 1 }, (_, i) => [i]);

describe('eventStreamGuard', () => {
  const stream =
    ': hello\r\n\r\nid: 1\revent: plant.created\rdata: {"a":1}\r\rretry: 3000\n\nid: 2\ndata: x\n\n';

  it.each(everyCut(stream))('passes a stream through unchanged, cut at %j', (cut) => {
    expect(feed(stream, [cut])).toBe(stream);
  });

  it('passes a stream of any length through, as long as each event is small', () => {
    const event = `data: ${'x'.repeat(90)}\r\n\r\n`;
    const guard = eventStreamGuard({ maxRetryMs: 30_000, maxEventChars: 100 });
    for (let i = 0; i < 10_000; i++) expect(guard(event)).toBe(event);
  });

  it('lowers a retry: above maxRetryMs, and leaves the others as they are', () => {
    expect(feed('retry: 999999999\nretry:31000\r\nretry: 30000\nretry: 1e9\nretry\n\n', [9])).toBe(
      'retry: 30000\nretry: 30000\r\nretry: 30000\nretry: 1e9\nretry\n\n',
    );
  });

  it('fails once one event passes maxEventChars, however it is cut and whatever lines it has', () => {
    const event = `data: ${'x'.repeat(40)}\n: comment\ndata: ${'y'.repeat(40)}\nid: 1\n`;
    for (const [cut] of everyCut(event)) {
      expect(() => feed(event, [cut!])).toThrow(
        new EventTooLargeError('an event is longer than 100 characters'),
      );
    }
    // An incomplete line counts too: a server need never end it.
    expect(() => feed(`data: ${'x'.repeat(200)}`, [50, 100, 150])).toThrow(EventTooLargeError);
  });

  it('does not take the LF of a CRLF cut in two for a blank line', () => {
    const event = `data: ${'x'.repeat(60)}\r\ndata: ${'y'.repeat(60)}\r\n\r\n`;
    expect(event[66]).toBe('\r');
    expect(() => feed(event, [67])).toThrow(EventTooLargeError);
  });

  it('holds an incomplete line until its end arrives', () => {
    const guard = eventStreamGuard({ maxRetryMs: 100 });
    expect(guard('data: x\nretry: 99')).toBe('data: x\n');
    expect(guard('9999\n\n')).toBe('retry: 100\n\n');
  });
});
