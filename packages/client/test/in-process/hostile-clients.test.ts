import type { ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { backoffFetch, createBackoff } from '../../src/backoff.ts';
import { createRestClient, createTrpcClient, PlantStoreError } from '../../src/index.ts';
import { failureOf, rejectionOf } from '../support/clients.ts';
import { type FakeServer, type Seen, sendJson, startFakeServer } from '../support/fake-server.ts';

// The library clients against a server that sends what the real one never would: every failure
// is a PlantStoreError with the answer's status, and nothing the server says makes them hold an
// answer without bound or wait for days.

const TOKEN = 'hostile-clients-token';

const servers: FakeServer[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
});

async function fake(answer: (res: ServerResponse, request: Seen, index: number) => void) {
  const server = await startFakeServer(answer);
  servers.push(server);
  return server;
}

/** One read call of each client, the same operation over both transports. */
const clients = [
  {
    name: 'REST client',
    url: (base: string) => `${base}/plants`,
    list: (baseUrl: string) => createRestClient({ baseUrl, token: TOKEN }).listPlants(),
  },
  {
    name: 'tRPC client',
    url: (base: string) => `${base}/trpc/plants.list`,
    list: (baseUrl: string) => createTrpcClient({ baseUrl, token: TOKEN }).plants.list.query({}),
  },
];

/** Writes `mebibytes` MiB of `x` as fast as the client reads; `cut` resolves true when it hung up first. */
function flood(res: ServerResponse, mebibytes: number) {
  const chunk = 'x'.repeat(1024 * 1024);
  let written = 0;
  const cut = new Promise<boolean>((resolve) => res.once('close', () => resolve(!res.writableFinished)));
  const write = () => {
    while (written < mebibytes) {
      written++;
      if (!res.write(chunk)) return void res.once('drain', write);
    }
    res.end();
  };
  res.writeHead(200, { 'content-type': 'application/json' });
  write();
  return cut;
}

describe.each(clients)('the $name against a hostile server', (client) => {
  it("fails a proxy's 502 page (not JSON) with status 502, not as no answer", async () => {
    const server = await fake((res) => {
      res.writeHead(502, { 'content-type': 'text/html' });
      res.end('<html><body>Bad Gateway</body></html>');
    });
    expect(await failureOf(client.list(server.url))).toMatchObject({
      name: 'PlantStoreError',
      status: 502,
      serverMessage: undefined,
      message: `[GET] ${client.url(server.url)}: 502 Bad Gateway`,
    });
  });

  it('stops reading an answer past 16 MiB and fails with its status', async () => {
    let cut: Promise<boolean> | undefined;
    const server = await fake((res) => {
      cut = flood(res, 64);
    });
    expect(await failureOf(client.list(server.url))).toMatchObject({
      status: 200,
      message: `[GET] ${client.url(server.url)}: 200 the answer is larger than 16 MiB`,
    });
    expect(await cut).toBe(true);
  });

  it('fails at once on an answer that declares more than 16 MiB', async () => {
    // Declares 1 TB and sends nothing: only the declared length can fail it.
    const server = await fake((res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(10 ** 12) });
      res.flushHeaders();
    });
    expect(await failureOf(client.list(server.url))).toMatchObject({
      status: 200,
      message: `[GET] ${client.url(server.url)}: 200 the answer is larger than 16 MiB`,
    });
  });
});

describe('REST client against a hostile server', () => {
  const rest = (server: FakeServer) => createRestClient({ baseUrl: server.url, token: TOKEN });

  it('reads at most 64 KiB of an error answer', async () => {
    const server = await fake((res) => sendJson(res, 400, { error: 400, message: 'x'.repeat(1024 * 1024) }));
    expect(await failureOf(rest(server).getPlant(1n))).toMatchObject({
      status: 400,
      serverMessage: undefined,
      message: `[GET] ${server.url}/plants/1: 400 the answer is larger than 64 KiB`,
    });
  });

  it('fails a malformed Link header with a PlantStoreError, never a TypeError', async () => {
    const server = await fake((res, seen) => {
      const link = '<http://[::1>; rel="next"';
      if (seen.url.startsWith('/plants'))
        return sendJson(res, 200, [{ id: 1, name: 'Fern', version: 1 }], { link });
      sendJson(res, 200, [], { link });
    });
    const error = await rejectionOf(rest(server).listPlants());
    expect(error).toBeInstanceOf(PlantStoreError);
    expect(error.message).toBe(
      `[GET] ${server.url}/plants: 200 the answer's Link header is malformed (Invalid URL)`,
    );
    expect(error.cause).toBeInstanceOf(TypeError);
    expect((await failureOf(rest(server).endpoints.deliveries('we_0123456789abcdef01234567'))).message).toBe(
      `[GET] ${server.url}/webhook-endpoints/we_0123456789abcdef01234567/deliveries: 200 ` +
        "the answer's Link header is malformed (Invalid URL)",
    );
  });

  it('fails a next page that does not come after the plants listed, so a loop over pages ends', async () => {
    const server = await fake((res) =>
      sendJson(res, 200, [{ id: 5, name: 'Fern', version: 1 }], { link: '</plants?after=4>; rel="next"' }),
    );
    expect((await failureOf(rest(server).listPlants())).message).toBe(
      `[GET] ${server.url}/plants: 200 its next page (after=4) does not come after the plants it lists`,
    );
  });

  it('allDeliveries: fails when a next page is one already read, after yielding each page once', async () => {
    const endpoint = 'we_0123456789abcdef01234567';
    const [a, b, c] = ['a', 'b', 'c'].map((hex) => `msg_${hex.repeat(32)}`);
    // Each page lists the delivery of its cursor and links to the next; the page after c is b again.
    const pages = new Map([
      ['', { id: a, next: b }],
      [b, { id: b, next: c }],
      [c, { id: c, next: b }],
    ]);
    const server = await fake((res, seen) => {
      const page = pages.get(new URL(seen.url, server.url).searchParams.get('before') ?? '')!;
      const delivery = {
        id: page.id,
        event: 'webhook.ping',
        status: 'failed',
        attempts: 1,
        lastResponseCode: 500,
        lastError: null,
        nextAttemptAt: null,
        createdAt: '2026-11-25T00:00:00.000Z',
      };
      const link = `</webhook-endpoints/${endpoint}/deliveries?before=${page.next}>; rel="next"`;
      sendJson(res, 200, [delivery], { link });
    });
    const seen: string[] = [];
    const reading = (async () => {
      for await (const delivery of rest(server).endpoints.allDeliveries(endpoint)) seen.push(delivery.id);
    })();
    expect((await failureOf(reading)).message).toBe(
      `[GET] ${server.url}/webhook-endpoints/${endpoint}/deliveries?before=${c}: 200 ` +
        `its next page (before=${b}) was read already`,
    );
    expect(seen).toStrictEqual([a, b, c]);
  });

  it('events: waits at most maxReconnectMs whatever Retry-After says (30 s by default)', async () => {
    const server = await fake((res) =>
      sendJson(res, 503, { error: 503, message: 'Restarting.' }, { 'retry-after': '999999999' }),
    );
    const delays: number[] = [];
    const stop = new AbortController();
    const events = rest(server).events({
      signal: stop.signal,
      maxReconnectMs: 100,
      onReconnect: ({ delayMs }) => {
        delays.push(delayMs);
        if (delays.length === 3) stop.abort();
      },
    });
    for await (const _ of events) expect.unreachable();
    expect(delays).toStrictEqual([100, 100, 100]);
    expect(server.requests).toHaveLength(3);

    const byDefault = new AbortController();
    const waits: number[] = [];
    for await (const _ of rest(server).events({
      signal: byDefault.signal,
      onReconnect: ({ delayMs }) => {
        waits.push(delayMs);
        byDefault.abort();
      },
    }))
      expect.unreachable();
    expect(waits).toStrictEqual([30_000]);
  });

  it('events: a retry: field of days is lowered to maxReconnectMs', async () => {
    const server = await fake((res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end('retry: 999999999\n\n');
    });
    const delays: number[] = [];
    const stop = new AbortController();
    for await (const _ of rest(server).events({
      signal: stop.signal,
      maxReconnectMs: 100,
      onReconnect: ({ delayMs }) => {
        delays.push(delayMs);
        if (delays.length === 2) stop.abort();
      },
    }))
      expect.unreachable();
    expect(delays).toStrictEqual([100, 100]);
    expect(server.requests).toHaveLength(2);
  });

  it('events: an event longer than 1 MiB ends the stream with a PlantStoreError, not a retry', async () => {
    const server = await fake((res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      // Data lines of one event that never ends, with comments between them.
      const line = `data: ${'x'.repeat(64 * 1024)}\n: keep-alive\n`;
      let sent = 0;
      const write = () => {
        while (sent++ < 1000) if (!res.write(line)) return void res.once('drain', write);
      };
      write();
    });
    const reading = (async () => {
      for await (const _ of rest(server).events({})) expect.unreachable();
    })();
    expect(await failureOf(reading)).toMatchObject({
      status: 200,
      message: `[GET] ${server.url}/plants/events: 200 an event is longer than 1048576 characters`,
    });
    expect(server.requests).toHaveLength(1);
  });
});

describe('tRPC client against a hostile server', () => {
  it('a subscription reconnects within maxReconnectMs when the stream says retry: 999999999', async () => {
    const server = await fake((res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end('retry: 999999999\n\n');
    });
    const client = createTrpcClient({ baseUrl: server.url, token: TOKEN, maxReconnectMs: 100 });
    const subscription = client.plants.events.subscribe({}, { onData: () => undefined });
    const deadline = Date.now() + 10_000;
    while (server.requests.length < 3 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    subscription.unsubscribe();
    expect(server.requests.length).toBeGreaterThanOrEqual(3);
  });

  it('a subscription reconnects at most once a second when the server asks for 1 ms of inactivity', async () => {
    // tRPC's `connected` event, then silence: the client reconnects after the inactivity it says.
    const server = await fake((res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('event: connected\ndata: {"reconnectAfterInactivityMs":1}\n\n');
    });
    const client = createTrpcClient({ baseUrl: server.url, token: TOKEN });
    const subscription = client.plants.events.subscribe({}, { onData: () => undefined });
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    subscription.unsubscribe();
    // At 0 s, about 1 s and about 2 s (without the floor: hundreds).
    expect(server.requests.length).toBeGreaterThanOrEqual(2);
    expect(server.requests.length).toBeLessThanOrEqual(3);
  });
});

describe('the bulk commands’ backoff', () => {
  it('waits a Retry-After up to maxWaitSeconds, and hands a longer one back at once', async () => {
    const server = await fake((res, _seen, index) => {
      const retryAfter = ['1', '2'][index];
      if (retryAfter === undefined) return sendJson(res, 200, []);
      sendJson(res, 429, { error: 429, message: 'Too many requests.' }, { 'retry-after': retryAfter });
    });
    const waited: number[] = [];
    const refused: number[] = [];
    const fetch = backoffFetch(
      createBackoff({
        maxWaitSeconds: 1,
        onWait: (seconds) => waited.push(seconds),
        onWaitRefused: (seconds) => refused.push(seconds),
      }),
      { timeoutMs: 5_000 },
    );
    const started = performance.now();
    const response = await fetch(`${server.url}/plants`);
    expect(response.status).toBe(429);
    expect(performance.now() - started).toBeGreaterThanOrEqual(990);
    expect({ waited, refused, requests: server.requests.length }).toStrictEqual({
      waited: [1],
      refused: [2],
      requests: 2,
    });
  });
});
