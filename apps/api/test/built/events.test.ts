import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type ApiProcess, startApiProcess } from '../support/api-process.ts';
import { JSON_HEADERS, postPlant, send, TOKEN } from '../support/http.ts';
import { openSse, type SseStream } from '../support/sse.ts';
import {
  postgresAvailable,
  postgresTestStore,
  type TestStoreInstance,
  testStores,
} from '../support/stores.ts';

const BIG = 2n ** 53n + 1n;
const HEARTBEAT_MS = 500;
const HOLDER = new URL('../support/stream-holder.mjs', import.meta.url).pathname;
type Event = {
  id: bigint;
  type: string;
  plant: { id: bigint; name?: string; tag?: string; version?: bigint };
  createdAt: string;
};
const data = (stream: SseStream) => stream.events.map((event) => event.data as Event);
const created = (id: bigint, name: string, tag?: string) => ({
  type: 'plant.created',
  plant: tag === undefined ? { id, name } : { id, name, tag },
});
const deleted = (id: bigint) => ({ type: 'plant.deleted', plant: { id } });
/** Each event's type and plant, without the plant's version (an event's version is its own id: checked below). */
const summary = (events: Event[]) =>
  events.map(({ id, type, plant: { version, ...plant } }) => {
    if (version !== undefined) expect(version).toBe(id);
    return { type, plant };
  });

describe.each(testStores())('GET /plants/events on $name', (testStore) => {
  let store: TestStoreInstance;
  let api: ApiProcess;
  const open: SseStream[] = [];
  const sse = async (query = '', headers: Record<string, string> = {}) => {
    const stream = await openSse(`${api.url}/plants/events${query}`, headers);
    open.push(stream);
    return stream;
  };

  beforeAll(async () => {
    store = await testStore.setup();
    api = await startApiProcess({
      env: { ...store.env, EVENTS_HEARTBEAT_MS: '300', EVENT_STREAMS_PER_TOKEN: '3' },
    });
  });
  afterAll(async () => {
    for (const stream of open) stream.close();
    await api?.stop();
    api?.cleanup();
    await store?.teardown();
  });

  it('sends each committed create and delete, in commit order, as id, event and exact JSON data', async () => {
    const stream = await sse();
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(stream.headers.get('cache-control')).toBe('no-cache');
    expect((await postPlant(api.url, `{"id":${BIG},"name":"Monstera","tag":"aroid"}`)).status).toBe(200);
    // A duplicate changes nothing, so it has no event.
    expect((await postPlant(api.url, `{"id":${BIG},"name":"Other"}`)).status).toBe(409);
    expect((await send(`${api.url}/plants/${BIG}`, { method: 'DELETE', headers: JSON_HEADERS })).status).toBe(
      204,
    );
    await stream.waitFor(2);
    await sleep(300);
    const [first, second] = stream.events;
    expect(stream.events).toHaveLength(2);
    expect(first!.event).toBe('plant.created');
    expect(second!.event).toBe('plant.deleted');
    const events = data(stream);
    expect(summary(events)).toStrictEqual([created(BIG, 'Monstera', 'aroid'), deleted(BIG)]);
    expect(first!.id).toBe(String(events[0]!.id));
    expect(second!.id).toBe(String(events[1]!.id));
    expect(events[1]!.id).toBeGreaterThan(events[0]!.id);
    expect(Date.parse(events[0]!.createdAt)).toBeGreaterThan(Date.now() - 60_000);
    // Nothing to send for EVENTS_HEARTBEAT_MS: a comment keeps the connection alive.
    await sleep(700);
    expect(stream.comments).toContain('heartbeat');
  });

  it('resumes after a disconnect from Last-Event-ID (or ?after=): every missed event once, in order, then live ones', async () => {
    const live = await sse();
    await postPlant(api.url, '{"id":1,"name":"Fern"}');
    const [seen] = await live.waitFor(1);
    live.close();
    await postPlant(api.url, '{"id":2,"name":"Cactus"}');
    await send(`${api.url}/plants/1`, { method: 'DELETE', headers: JSON_HEADERS });
    // The header wins over the `after` of the URL the stream first started from.
    const resumed = await sse('?after=0', { 'last-event-id': seen!.id });
    await resumed.waitFor(2);
    await postPlant(api.url, '{"id":3,"name":"Aloe","tag":"succulent"}');
    await resumed.waitFor(3);
    await sleep(200);
    expect(summary(data(resumed))).toStrictEqual([
      created(2n, 'Cactus'),
      deleted(1n),
      created(3n, 'Aloe', 'succulent'),
    ]);
    const byQuery = await sse(`?after=${seen!.id}`);
    await byQuery.waitFor(3);
    expect(byQuery.events.map((event) => event.id)).toStrictEqual(resumed.events.map((event) => event.id));
    resumed.close();
    byQuery.close();
    // Until the server sees them closed they count against the token's 3 (the next test opens one).
    await sleep(200);
  });

  it('appends one event for a create and a delete sent with an Idempotency-Key, none for their replays', async () => {
    const stream = await sse();
    const keyed = (key: string) => ({ ...JSON_HEADERS, 'idempotency-key': `"${key}"` });
    const body = '{"id":77,"name":"Keyed"}';
    for (let i = 0; i < 2; i++) expect((await postPlant(api.url, body, keyed('create-77'))).status).toBe(200);
    for (let i = 0; i < 2; i++) {
      const gone = await send(`${api.url}/plants/77`, { method: 'DELETE', headers: keyed('delete-77') });
      expect(gone.status).toBe(204);
    }
    await stream.waitFor(2);
    await sleep(300);
    expect(summary(data(stream))).toStrictEqual([created(77n, 'Keyed'), deleted(77n)]);
    stream.close();
  });

  it('sends an HTTP/1.0 client the same frames without chunked encoding, ending with the connection', async () => {
    const { hostname, port } = new URL(api.url);
    const socket = connect({ host: hostname, port: Number(port) });
    let received = '';
    socket.setEncoding('utf8');
    socket.on('data', (text: string) => {
      received += text;
    });
    socket.write(`GET /plants/events HTTP/1.0\r\nAuthorization: Bearer ${TOKEN}\r\n\r\n`);
    await vi.waitFor(() => expect(received).toContain('retry: 1000\n\n'));
    expect((await postPlant(api.url, '{"id":10,"name":"Raw"}')).status).toBe(200);
    await vi.waitFor(() => expect(received).toContain('event: plant.created\n'));
    socket.destroy();
    await sleep(200);
    const [head, body] = received.split('\r\n\r\n');
    expect(head).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(head!.toLowerCase()).not.toContain('transfer-encoding');
    expect(head!.toLowerCase()).toContain('connection: close');
    expect(body).toMatch(
      /^retry: 1000\n\nid: ([0-9]+)\nevent: plant\.created\ndata: \{"id":\1,"type":"plant\.created","plant":\{"id":10,"name":"Raw","version":\1\},"createdAt":"[^"]+"\}\n\n$/,
    );
  });

  it('answers 400 to a malformed resume id and 401 without a token, as Error bodies', async () => {
    const badQuery = await sse('?after=-1');
    expect([badQuery.status, badQuery.body]).toStrictEqual([
      400,
      {
        error: 400,
        message: 'Invalid request parameters: after must be an event id (a non-negative 64-bit integer).',
      },
    ]);
    const badHeader = await sse('', { 'last-event-id': 'abc' });
    expect(badHeader.status).toBe(400);
    const anonymous = await send(`${api.url}/plants/events`);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toBe('Bearer');
  });

  it('limits the streams of one token (EVENT_STREAMS_PER_TOKEN): 429 with Retry-After, until one closes', async () => {
    const streams = [await sse(), await sse(), await sse()];
    const refused = await send(`${api.url}/plants/events`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(refused.json).toStrictEqual({
      error: 429,
      message: 'This token has 3 event streams open already; close one first.',
    });
    streams[0]!.close();
    await sleep(200);
    const again = await sse();
    expect(again.status).toBe(200);
    for (const stream of [...streams, again]) stream.close();
  });
});

describe.each(testStores())('event stream slots and resume ids on $name', (testStore) => {
  let store: TestStoreInstance;
  let api: ApiProcess;
  const open: SseStream[] = [];
  const sse = async (query = '', headers: Record<string, string> = {}) => {
    const stream = await openSse(`${api.url}/plants/events${query}`, headers);
    open.push(stream);
    return stream;
  };

  beforeAll(async () => {
    store = await testStore.setup();
    api = await startApiProcess({
      env: { ...store.env, EVENTS_HEARTBEAT_MS: String(HEARTBEAT_MS), EVENT_STREAMS_PER_TOKEN: '3' },
    });
  });
  afterAll(async () => {
    for (const stream of open) stream.close();
    await api?.stop();
    api?.cleanup();
    await store?.teardown();
  });

  it('frees the slots of a killed client’s streams, SSE and tRPC, within a heartbeat: the token may open them again', async () => {
    const created = await postPlant(api.url, '{"id":600,"name":"Fern"}');
    const newest = BigInt(created.headers.get('etag')!.slice(1, -1));
    // Each resumes one event back: once that event arrived, its stream holds its slot.
    const input = encodeURIComponent(JSON.stringify({ json: { lastEventId: String(newest - 1n) } }));
    const urls = [
      `${api.url}/plants/events?after=${newest - 1n}`,
      `${api.url}/trpc/plants.events?input=${input}`,
      `${api.url}/trpc/plants.events?input=${input}`,
    ];
    const holder = spawn(process.execPath, [HOLDER, JSON.stringify({ token: TOKEN, urls, until: 'id: ' })], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      const [line] = (await once(holder.stdout!, 'data')) as [Buffer];
      expect(String(line)).toBe('[200,200,200]\n');
      const refused = await send(`${api.url}/plants/events`, {
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      expect(refused.status).toBe(429);
    } finally {
      holder.kill('SIGKILL');
    }
    await once(holder, 'exit');
    // The kernel closed the killed client's sockets: the server frees each slot as it sees that,
    // well within a heartbeat.
    await vi.waitFor(
      async () => {
        const streams = [await sse(), await sse(), await sse()];
        for (const stream of streams) stream.close();
        expect(streams.map((stream) => stream.status)).toStrictEqual([200, 200, 200]);
      },
      { timeout: HEARTBEAT_MS, interval: 50 },
    );
    // Until the server sees them closed they count against the token's 3 (the next test opens some).
    await sleep(200);
  });

  it('answers 410 to a resume past the newest event, by Last-Event-ID, ?after= or tRPC’s lastEventId', async () => {
    const created = await postPlant(api.url, '{"id":601,"name":"Fern"}');
    const newest = created.headers.get('etag')!.slice(1, -1);
    const max = '9223372036854775807';
    const gone = {
      error: 410,
      message:
        `Event ${max} is past the newest event (${newest}): this store never sent it (was it restored from a backup?); ` +
        'start again without a resume id and list the plants to catch up.',
    };
    const byHeader = await sse('', { 'last-event-id': max });
    expect([byHeader.status, byHeader.body]).toStrictEqual([410, gone]);
    const byQuery = await sse(`?after=${max}`);
    expect([byQuery.status, byQuery.body]).toStrictEqual([410, gone]);
    const input = encodeURIComponent(JSON.stringify({ json: { lastEventId: max } }));
    const subscription = await openSse(`${api.url}/trpc/plants.events?input=${input}`);
    const [, error] = await subscription.waitFor(2);
    subscription.close();
    expect(error).toMatchObject({
      event: 'serialized-error',
      data: { json: { message: gone.message, data: { code: 'NOT_FOUND', path: 'plants.events' } } },
    });
    await sleep(200);
  });
});

describe('event streams of one SQLite instance', () => {
  it('answers 410 when resuming from before the retention, and 200 from after what was pruned', async () => {
    const api = await startApiProcess({ env: { EVENTS_RETENTION_MS: '1000' } });
    try {
      for (const id of [1, 2, 3]) await postPlant(api.url, `{"id":${id},"name":"Fern"}`);
      const whole = await openSse(`${api.url}/plants/events?after=0`);
      const events = await whole.waitFor(3);
      whole.close();
      // The pruner runs every min(60 s, EVENTS_RETENTION_MS).
      await sleep(2_500);
      const gone = await openSse(`${api.url}/plants/events?after=0`);
      expect([gone.status, gone.body]).toStrictEqual([
        410,
        {
          error: 410,
          message:
            'The events after 0 are no longer kept (see EVENTS_RETENTION_MS); start again without a resume id.',
        },
      ]);
      const fromLast = await openSse(`${api.url}/plants/events?after=${events[2]!.id}`);
      expect(fromLast.status).toBe(200);
      await postPlant(api.url, '{"id":4,"name":"Fern"}');
      const [next] = await fromLast.waitFor(1);
      expect(BigInt(next!.id)).toBeGreaterThan(BigInt(events[2]!.id));
      fromLast.close();
    } finally {
      await api.stop();
      api.cleanup();
    }
  });

  it('limits the streams of the instance (EVENT_STREAMS_MAX): 503 with Retry-After once every token holds its share', async () => {
    const SECOND = 'second-token-0123456789';
    const api = await startApiProcess({ env: { EVENT_STREAMS_MAX: '2', API_TOKENS: `${TOKEN},${SECOND}` } });
    try {
      const streams = [
        await openSse(`${api.url}/plants/events`),
        await openSse(`${api.url}/plants/events`, { authorization: `Bearer ${SECOND}` }),
      ];
      expect(streams.map((stream) => stream.status)).toStrictEqual([200, 200]);
      for (const token of [TOKEN, SECOND]) {
        const refused = await send(`${api.url}/plants/events`, {
          headers: { authorization: `Bearer ${token}` },
        });
        expect(refused.status).toBe(503);
        expect(refused.headers.get('retry-after')).toBe('1');
        expect(refused.json).toStrictEqual({
          error: 503,
          message: 'This instance serves 2 event streams already; retry in a second.',
        });
      }
      for (const stream of streams) stream.close();
    } finally {
      await api.stop();
      api.cleanup();
    }
  });

  it('shares a full instance between tokens: a token below its share takes the place of the largest holder’s oldest stream, which ends cleanly and resumes by id', async () => {
    const SECOND = 'second-token-0123456789';
    const api = await startApiProcess({ env: { EVENT_STREAMS_MAX: '4', API_TOKENS: `${TOKEN},${SECOND}` } });
    const streams: SseStream[] = [];
    const sseAs = async (token: string, headers: Record<string, string> = {}) => {
      const stream = await openSse(`${api.url}/plants/events`, {
        authorization: `Bearer ${token}`,
        ...headers,
      });
      streams.push(stream);
      return stream;
    };
    try {
      const first = [await sseAs(TOKEN), await sseAs(TOKEN), await sseAs(TOKEN), await sseAs(TOKEN)];
      expect(first.map((stream) => stream.status)).toStrictEqual([200, 200, 200, 200]);
      await postPlant(api.url, '{"id":1,"name":"Fern"}');
      const [seen] = await first[0]!.waitFor(1);
      // The instance is full; the second token holds none: the first token's oldest stream makes room.
      const second = await sseAs(SECOND);
      expect(second.status).toBe(200);
      expect(await first[0]!.ended).toBe('end');
      expect(first[0]!.comments).toContain(
        "closed: this instance's streams are shared between tokens, and this token held the most; reconnect to resume",
      );
      // Resuming it now: 3 against 1 is within one of a fair share, so it waits its turn (503).
      const refused = await sseAs(TOKEN, { 'last-event-id': seen!.id });
      expect([refused.status, refused.body]).toStrictEqual([
        503,
        { error: 503, message: 'This instance serves 4 event streams already; retry in a second.' },
      ]);
      // The second token takes one more place (3 against 1), then 2 against 2 is fair: refused.
      expect((await sseAs(SECOND)).status).toBe(200);
      expect(await first[1]!.ended).toBe('end');
      expect((await sseAs(SECOND)).status).toBe(503);
      expect(first.slice(2).every((stream) => stream.events.length === 1)).toBe(true);
      // Once the second token lets one go, the first resumes by id: nothing missed, nothing twice.
      second.close();
      await postPlant(api.url, '{"id":2,"name":"Cactus"}');
      await sleep(200);
      const resumed = await sseAs(TOKEN, { 'last-event-id': seen!.id });
      expect(resumed.status).toBe(200);
      expect(summary(data({ ...resumed, events: await resumed.waitFor(1) }))).toStrictEqual([
        created(2n, 'Cactus'),
      ]);
    } finally {
      for (const stream of streams) stream.close();
      await api.stop();
      api.cleanup();
    }
  });

  it('answers 410 to a resume from further back than EVENTS_REPLAY_MAX, by ?after=, Last-Event-ID or tRPC’s lastEventId', async () => {
    const api = await startApiProcess({ env: { EVENTS_REPLAY_MAX: '3' } });
    try {
      for (const id of [1, 2, 3, 4, 5]) await postPlant(api.url, `{"id":${id},"name":"Fern"}`);
      const gone = {
        error: 410,
        message:
          'More than 3 events follow 0, more than a stream replays (see EVENTS_REPLAY_MAX); start again without a resume id and list the plants to catch up.',
      };
      const byQuery = await openSse(`${api.url}/plants/events?after=0`);
      expect([byQuery.status, byQuery.body]).toStrictEqual([410, gone]);
      const byHeader = await openSse(`${api.url}/plants/events`, { 'last-event-id': '0' });
      expect([byHeader.status, byHeader.body]).toStrictEqual([410, gone]);
      // Over tRPC the stream opens (200) and carries the error; the client's link stops there.
      const input = encodeURIComponent(JSON.stringify({ json: { lastEventId: '0' } }));
      const subscription = await openSse(`${api.url}/trpc/plants.events?input=${input}`);
      const [, error] = await subscription.waitFor(2);
      expect(error).toMatchObject({
        event: 'serialized-error',
        data: { json: { message: gone.message, data: { code: 'NOT_FOUND', path: 'plants.events' } } },
      });
      subscription.close();
      // From the second event (ids start at 1), exactly 3 follow: replayed. Without a resume id, none.
      const bounded = await openSse(`${api.url}/plants/events?after=2`);
      expect(summary(data({ ...bounded, events: await bounded.waitFor(3) }))).toStrictEqual([
        created(3n, 'Fern'),
        created(4n, 'Fern'),
        created(5n, 'Fern'),
      ]);
      bounded.close();
      const fresh = await openSse(`${api.url}/plants/events`);
      expect(fresh.status).toBe(200);
      fresh.close();
    } finally {
      await api.stop();
      api.cleanup();
    }
  });

  it('after a SIGKILL delivers exactly the changes that committed, every acknowledged one among them', async () => {
    const first = await startApiProcess();
    const acknowledged: bigint[] = [];
    const attempts = Array.from({ length: 300 }, (_, i) =>
      postPlant(first.url, `{"id":${BIG + BigInt(i)},"name":"Fern"}`)
        .then((answer) => answer.status === 200 && acknowledged.push(BIG + BigInt(i)))
        .catch(() => {}),
    );
    await sleep(150);
    await first.kill();
    await Promise.all(attempts);
    const second = await startApiProcess({ dataDir: first.dataDir });
    try {
      const stream = await openSse(`${second.url}/plants/events?after=0`);
      const stored = (await send(`${second.url}/plants?limit=1000`, { headers: JSON_HEADERS })).text;
      const storedIds = [...stored.matchAll(/"id":(\d+)/g)].map((match) => BigInt(match[1]!));
      expect(storedIds.length).toBeGreaterThanOrEqual(acknowledged.length);
      await stream.waitFor(storedIds.length);
      await sleep(300);
      const events = data(stream);
      // An event if and only if the change committed: exactly the stored plants, in commit order.
      expect(events.map((event) => event.plant.id).sort((a, b) => (a < b ? -1 : 1))).toStrictEqual(storedIds);
      expect(events.every((event, i) => i === 0 || event.id > events[i - 1]!.id)).toBe(true);
      for (const id of acknowledged) expect(storedIds).toContain(id);
      stream.close();
    } finally {
      await second.stop();
      second.cleanup();
    }
  });

  it('ends streams cleanly on SIGTERM; the client resumes on the next instance without a gap or a repeat', async () => {
    const first = await startApiProcess({ env: { SHUTDOWN_GRACE_MS: '5000' } });
    const stream = await openSse(`${first.url}/plants/events?after=0`);
    await postPlant(first.url, '{"id":1,"name":"Fern"}');
    const [seen] = await stream.waitFor(1);
    const stopping = Date.now();
    expect(await first.stop()).toBe(0);
    // The stream did not hold the shutdown for its grace period: it was ended at once.
    expect(Date.now() - stopping).toBeLessThan(4_000);
    expect(await stream.ended).toBe('end');
    const second = await startApiProcess({ dataDir: first.dataDir });
    try {
      await postPlant(second.url, '{"id":2,"name":"Cactus"}');
      const resumed = await openSse(`${second.url}/plants/events`, { 'last-event-id': seen!.id });
      await resumed.waitFor(1);
      await sleep(300);
      expect(summary(data(resumed))).toStrictEqual([created(2n, 'Cactus')]);
      resumed.close();
    } finally {
      await second.stop();
      second.cleanup();
    }
  });
});

describe.skipIf(!postgresAvailable())('event streams across PostgreSQL instances', () => {
  let store: TestStoreInstance;
  let a: ApiProcess;
  let b: ApiProcess;
  beforeAll(async () => {
    store = await postgresTestStore.setup();
    // A poll far slower than the bound below: the notification is what must carry the event.
    a = await startApiProcess({ env: { ...store.env, EVENTS_POLL_MS: '30000' } });
    b = await startApiProcess({ env: { ...store.env, EVENTS_POLL_MS: '30000' } });
  });
  afterAll(async () => {
    await a?.stop();
    await b?.stop();
    a?.cleanup();
    b?.cleanup();
    await store?.teardown();
  });

  it('delivers a change committed on one instance to streams on the other within 1 s, in one order on both', async () => {
    const onA = await openSse(`${a.url}/plants/events`);
    const onB = await openSse(`${b.url}/plants/events`);
    await sleep(300);
    const committed = Date.now();
    expect((await postPlant(b.url, `{"id":${BIG},"name":"Monstera"}`)).status).toBe(200);
    await onA.waitFor(1, 1_000);
    expect(Date.now() - committed).toBeLessThan(1_000);
    expect((await send(`${a.url}/plants/${BIG}`, { method: 'DELETE', headers: JSON_HEADERS })).status).toBe(
      204,
    );
    await onB.waitFor(2, 1_000);
    await onA.waitFor(2, 1_000);
    expect(summary(data(onA))).toStrictEqual([created(BIG, 'Monstera'), deleted(BIG)]);
    expect(onB.events.map((event) => event.id)).toStrictEqual(onA.events.map((event) => event.id));
    onA.close();
    onB.close();
  });

  it('keeps one gapless order under concurrent creates on both instances', async () => {
    const watcher = await openSse(`${a.url}/plants/events`);
    await sleep(300);
    const ids = Array.from({ length: 200 }, (_, i) => 10_000n + BigInt(i));
    await Promise.all(
      ids.map((id, i) => postPlant(i % 2 === 0 ? a.url : b.url, `{"id":${id},"name":"Fern"}`)),
    );
    await watcher.waitFor(200, 10_000);
    const events = data(watcher);
    expect(new Set(events.map((event) => event.plant.id)).size).toBe(200);
    expect(events.every((event, i) => i === 0 || event.id > events[i - 1]!.id)).toBe(true);
    // A late reader gets the very same sequence from the log.
    const replay = await openSse(`${b.url}/plants/events?after=${events[0]!.id - 1n}`);
    await replay.waitFor(200, 10_000);
    expect(replay.events.map((event) => event.id)).toStrictEqual(watcher.events.map((event) => event.id));
    watcher.close();
    replay.close();
  });
});
