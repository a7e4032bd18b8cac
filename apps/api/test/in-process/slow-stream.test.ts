import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { Database } from '../../src/store/sqlite/driver.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningApi, startInProcess } from '../support/in-process.ts';
import { TOKEN } from '../support/http.ts';

const BUFFER = 1000;
const NAME = 'x'.repeat(2000);

/** A raw connection that asks for `path` and then reads nothing until `resume()`. */
function stalled(url: string, path: string, fast = false) {
  const { port } = new URL(url);
  const socket: Socket = connect(Number(port), '127.0.0.1');
  socket.on('error', () => {});
  let data = '';
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.write(
    `GET ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\nAccept: text/event-stream\r\n\r\n`,
  );
  socket.on('data', (chunk) => {
    if (!fast) data += chunk;
  });
  // The headers first, so the stream is open before the reading stops.
  const opened = new Promise<void>((resolve) => {
    socket.once('data', () => resolve());
  }).then(() => socket.pause());
  return { opened, closed, resume: () => socket.resume(), text: () => data, socket };
}

/** A consumer that keeps up: every event's id, as it arrives. */
function reader(url: string, path: string) {
  const conn = stalled(url, path, true);
  const ids: bigint[] = [];
  let partial = '';
  void conn.opened.then(() => conn.resume());
  conn.socket.on('data', (chunk) => {
    const lines = (partial + chunk).split('\n');
    partial = lines.pop()!;
    for (const line of lines) if (line.startsWith('id: ')) ids.push(BigInt(line.slice(4)));
  });
  return { ...conn, ids };
}

describe.each([
  { transport: 'SSE', path: '/plants/events' },
  { transport: 'tRPC', path: `/trpc/plants.events?input=${encodeURIComponent('{"json":{}}')}` },
])('a consumer too slow for its events, over $transport', ({ transport, path }) => {
  let api: RunningApi;
  beforeAll(async () => {
    api = await startInProcess({ env: { EVENT_STREAM_BUFFER: String(BUFFER), EVENTS_POLL_MS: '50' } });
  });
  afterAll(async () => {
    await api?.stop();
    api?.cleanup();
  });

  it('is cut with a reason it reads, while a stream that keeps up gets every event', async () => {
    const slow = stalled(api.url, path);
    const fast = reader(api.url, path);
    await Promise.all([slow.opened, fast.opened]);
    // Written straight into the log (the hub reads it every EVENTS_POLL_MS), 250 at a time, big
    // enough that the stalled socket fills and then its bounded buffer overflows.
    const db = new Database(join(api.dataDir, 'plants.db'));
    const append = db.prepare(
      "INSERT INTO plant_events (type, plant_id, name, created_at) VALUES ('plant.created', ?, ?, 0)",
    );
    let created = 0;
    let cutAt: number | undefined;
    try {
      while (cutAt === undefined && created < 40_000) {
        db.transaction(() => {
          for (let i = 0; i < 250; i++) append.run(++created, NAME);
        })();
        // 1,666 events a second: a tRPC subscription costs about 100 µs an event (tRPC's writer goes
        // through web streams), and at 4,166 a second the one that keeps up fell behind too on a
        // loaded 2-core machine, and was cut. The slow one overflows after as many events either way.
        await new Promise((resolve) => setTimeout(resolve, 150));
        if (api.logs.some((line) => line.includes('event stream cut: its consumer fell behind')))
          cutAt = created;
      }
    } finally {
      db.close();
    }
    // The one that kept up has every event, in order, while the slow one was being cut.
    await expect.poll(() => fast.ids.length, { timeout: 20_000 }).toBe(created);
    expect(fast.ids).toStrictEqual(Array.from({ length: created }, (_, i) => BigInt(i + 1)));
    // Reading on, the slow one finds why it was closed, then the end of the stream.
    slow.resume();
    await slow.closed;
    // Its last bytes (the chunked body's last chunks): the error event, then the end.
    const text = slow.text().slice(-400);
    if (transport === 'SSE')
      expect(text).toMatch(
        /event: error\ndata: \{"error":"too_slow","message":"This stream fell more than EVENT_STREAM_BUFFER events behind its consumer and was closed; reconnect with the last event id to resume\."\}\n\n\r\n0\r\n\r\n$/,
      );
    else {
      expect(text).toContain('event: serialized-error');
      expect(text).toContain('This stream fell more than EVENT_STREAM_BUFFER events behind its consumer');
    }
    fast.socket.destroy();
  }, 60_000);
});
