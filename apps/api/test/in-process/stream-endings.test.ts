import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningApi, startInProcess } from '../support/in-process.ts';
import { TOKEN } from '../support/http.ts';

const OTHER = 'other-reader-token-0123456789';

/** A raw stream: everything it received, and a promise of its connection's close. */
function rawStream(url: string, path: string, token: string) {
  const socket = connect(Number(new URL(url).port), '127.0.0.1');
  let text = '';
  socket.on('data', (chunk) => {
    text += chunk;
  });
  socket.on('error', () => {});
  socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n\r\n`);
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  return { text: () => text, closed, socket };
}

/**
 * How a stream ends when another token's takes its place on a full instance (EVENT_STREAMS_MAX):
 * SSE ends its response cleanly after saying why, and EventSource reconnects by itself; a tRPC
 * subscription's connection is cut rather than completed (no `return` event), so that
 * `httpSubscriptionLink` reconnects and resumes instead of ending the subscription.
 */
describe.each([
  {
    transport: 'SSE',
    path: '/plants/events',
    ending:
      /: closed: this instance's streams are shared between tokens, and this token held the most; reconnect to resume\n\n\r\n0\r\n\r\n$/,
  },
  {
    transport: 'tRPC',
    path: `/trpc/plants.events?input=${encodeURIComponent('{"json":{}}')}`,
    ending: /event: connected\ndata: \{\}\n\n\n\r\n$/,
  },
])('a stream displaced by another token’s, over $transport', ({ transport, path, ending }) => {
  let api: RunningApi;
  beforeAll(async () => {
    api = await startInProcess({
      env: { EVENT_STREAMS_MAX: '2', EVENT_STREAMS_PER_TOKEN: '2' },
      tokens: [{ name: 'other', secret: OTHER, scopes: ['read'] }],
    });
  });
  afterAll(async () => {
    await api?.stop();
    api?.cleanup();
  });

  it('ends as its transport’s clients expect, and the newcomer’s stream opens', async () => {
    const oldest = rawStream(api.url, path, TOKEN);
    await expect.poll(() => oldest.text()).toContain('\r\n\r\n');
    const second = rawStream(api.url, path, TOKEN);
    await expect.poll(() => second.text()).toContain('\r\n\r\n');
    const newcomer = rawStream(api.url, path, OTHER);
    // SSE's connection stays open for the next request; tRPC's is closed at once.
    if (transport === 'tRPC') await oldest.closed;
    await expect.poll(() => oldest.text()).toMatch(ending);
    await expect.poll(() => newcomer.text()).toMatch(/^HTTP\/1\.1 200 OK/);
    expect(second.socket.destroyed).toBe(false);
    for (const stream of [second, newcomer]) stream.socket.destroy();
  });
});
