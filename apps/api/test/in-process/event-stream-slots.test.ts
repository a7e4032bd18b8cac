import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createApp } from '../../src/app.ts';
import { createTokenVerifier } from '../../src/auth/tokens.ts';
import { loadConfig } from '../../src/config/config.ts';
import { createEventHub, type EventHub } from '../../src/events/hub.ts';
import { ALL_SCOPES } from '../../src/auth/scopes.ts';
import { openStore } from '../../src/store/open-store.ts';
import type { PlantStore } from '../../src/store/contract.ts';
import { deferAfterEach } from '../support/cleanups.ts';
import { errorBody, TOKEN, TOKEN_NAME } from '../support/http.ts';
import { openSse } from '../support/sse.ts';
import { type TestStoreInstance, testStores } from '../support/stores.ts';
import { startProxy } from '../support/tcp-proxy.ts';

const HEARTBEAT_MS = 500;
/** The token's streams: the tests hold all of them, so one more is refused until a slot is free. */
const PER_TOKEN = 8;
const HOLDER = new URL('../support/stream-holder.mjs', import.meta.url).pathname;
const AUTH = { authorization: `Bearer ${TOKEN}` };

/** A tRPC `plants.events` subscription's URL, with `input` as httpSubscriptionLink sends it (superjson). */
const trpcEvents = (base: string, input: object) =>
  `${base}/trpc/plants.events?input=${encodeURIComponent(JSON.stringify({ json: input }))}`;

/**
 * The app as server.ts wires it, on a real socket, with its event hub at hand: how many streams it
 * holds (`hub.size`) is what these tests are about.
 */
describe.each(testStores())('event stream slots on $name', (testStore) => {
  let instance: TestStoreInstance;
  let store: PlantStore;
  let hub: EventHub;
  let server: Server;
  let url: string;
  const defer = deferAfterEach();

  /**
   * The URLs of `count` streams, SSE and tRPC in turn: deleted-only ones, which nothing in these
   * tests wakes; resuming after event 0 with `resume`.
   */
  const streams = (count: number, resume = false) =>
    Array.from({ length: count }, (_, i) =>
      i % 2 === 0
        ? `${url}/plants/events?types=plant.deleted${resume ? '&after=0' : ''}`
        : trpcEvents(url, { types: ['plant.deleted'], ...(resume && { lastEventId: '0' }) }),
    );
  /** The answer to one more stream of the token: 429 while it holds PER_TOKEN, else 200. */
  const oneMore = async () => {
    const controller = new AbortController();
    const response = await fetch(`${url}/plants/events`, { headers: AUTH, signal: controller.signal });
    const answer = { status: response.status, body: response.status === 200 ? '' : await response.text() };
    controller.abort();
    return answer;
  };
  const refusal = {
    status: 429,
    body: errorBody(429, `This token has ${PER_TOKEN} event streams open already; close one first.`),
  };

  beforeAll(async () => {
    instance = await testStore.setup();
    const config = loadConfig({
      ...instance.env,
      API_TOKENS: TOKEN,
      EVENTS_HEARTBEAT_MS: String(HEARTBEAT_MS),
      EVENT_STREAMS_PER_TOKEN: String(PER_TOKEN),
    });
    store = await openStore(config.store);
    const log = pino({ level: 'silent' });
    hub = createEventHub(store.events, config.events, log);
    const app = createApp({
      store,
      log,
      publicUrl: 'http://127.0.0.1',
      verifier: createTokenVerifier([{ name: TOKEN_NAME, secret: TOKEN, scopes: ALL_SCOPES }]),
      events: { hub, heartbeatMs: config.events.heartbeatMs },
    });
    server = createServer(app.callback());
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const address = server.address() as { port: number };
    url = `http://127.0.0.1:${address.port}`;
  });
  afterAll(async () => {
    hub?.close();
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
    await store?.close();
    await instance?.teardown();
  });

  it('frees the slots of SSE streams and tRPC subscriptions whose client process was killed (SIGKILL)', async () => {
    const args = JSON.stringify({ token: TOKEN, urls: streams(PER_TOKEN) });
    const holder = spawn(process.execPath, [HOLDER, args], { stdio: ['ignore', 'pipe', 'inherit'] });
    defer(() => holder.kill('SIGKILL'));
    expect(await firstLine(holder)).toStrictEqual(JSON.stringify(Array(PER_TOKEN).fill(200)));
    await vi.waitFor(() => expect(hub.size).toBe(PER_TOKEN));
    expect(await oneMore()).toStrictEqual(refusal);

    holder.kill('SIGKILL');
    await once(holder, 'exit');
    // The kernel closed the killed client's sockets: each slot is free well within a heartbeat.
    await vi.waitFor(() => expect(hub.size).toBe(0), { timeout: HEARTBEAT_MS, interval: 20 });
    expect((await oneMore()).status).toBe(200);
  });

  it('frees the slots of streams whose sockets were reset or closed, whenever they went', async () => {
    const sockets: Socket[] = [];
    defer(() => {
      for (const socket of sockets) socket.destroy();
    });
    // Half wait for the answer's head, then go (reset or closed); half go at once, while the
    // stream is still being opened (a resume reads the log first).
    const half = PER_TOKEN / 2;
    const urls = [...streams(half), ...streams(half, true)];
    const gone = urls.map(async (streamUrl, i) => {
      const target = new URL(streamUrl);
      const socket = await rawGet(`${target.pathname}${target.search}`, new URL(url).port);
      sockets.push(socket);
      if (i < half) await once(socket, 'data');
      if (i % 4 < 2) socket.resetAndDestroy();
      else socket.destroy();
    });
    await Promise.all(gone);
    await vi.waitFor(() => expect(hub.size).toBe(0), { timeout: HEARTBEAT_MS, interval: 20 });
    // Nothing was left behind by a stream that opened after its client had gone.
    await new Promise((resolve) => setTimeout(resolve, 2 * HEARTBEAT_MS));
    expect(hub.size).toBe(0);
    expect((await oneMore()).status).toBe(200);
  });

  it('holds the slot of a stream behind a partition until its connection ends, then frees it at once', async () => {
    const proxy = await startProxy({ host: '127.0.0.1', port: Number(new URL(url).port) });
    defer(() => proxy.close());
    const behind = `http://127.0.0.1:${proxy.port}`;
    const held = [
      await openSse(`${behind}/plants/events?types=plant.deleted`),
      await openSse(trpcEvents(behind, { types: ['plant.deleted'] })),
    ];
    defer(() => {
      for (const stream of held) stream.close();
    });
    await vi.waitFor(() => expect(hub.size).toBe(2));
    // Nothing comes back, nothing is closed: the api's heartbeats go into buffers TCP still
    // acknowledges, so no write fails and the streams are as open as any.
    proxy.setMode('blackhole');
    await new Promise((resolve) => setTimeout(resolve, 3 * HEARTBEAT_MS));
    expect(hub.size).toBe(2);
    // The partition heals: the stale connections are reset, and the slots are free.
    proxy.setMode('up');
    await vi.waitFor(() => expect(hub.size).toBe(0), { timeout: HEARTBEAT_MS, interval: 20 });
  });
});

/** The first line `child` prints. */
async function firstLine(child: ChildProcess): Promise<string> {
  let text = '';
  for await (const chunk of child.stdout!) {
    text += String(chunk);
    if (text.includes('\n')) return text.slice(0, text.indexOf('\n'));
  }
  throw new Error(`the process ended having printed ${JSON.stringify(text)}`);
}

/** A raw GET with the test token over a socket of its own, once it is written. */
async function rawGet(path: string, port: string): Promise<Socket> {
  const socket = connect(Number(port), '127.0.0.1');
  socket.on('error', () => {});
  await once(socket, 'connect');
  socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${TOKEN}\r\n\r\n`);
  return socket;
}
