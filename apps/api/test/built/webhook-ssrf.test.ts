import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { type AddressInfo, createServer as createTcpServer, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import type { Dispatcher } from 'undici';
import { openConnections } from '../../src/webhooks/connections.ts';
import { MAX_ANSWER_BYTES, sendDelivery, webhookSigner } from '../../src/webhooks/send.ts';
import { checkEndpointUrl, type Resolve, type UrlPolicy } from '../../src/webhooks/ssrf.ts';
import { startApiProcess } from '../support/api-process.ts';
import { postPlant } from '../support/http.ts';
import { waitForLogs } from '../support/logs.ts';
import { newWebhookSecret, startReceiver } from '../support/webhook-receiver.ts';

const STRICT: UrlPolicy = { allowPrivate: false };
const PRIVATE_ALLOWED: UrlPolicy = { allowPrivate: true };
const secret = newWebhookSecret();
const PAYLOAD = '{"id":1,"name":"Fern"}';

let cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

/** The connections of one guard and resolver, as a subscriber of the worker keeps them: kept alive. */
const opened = new Map<unknown, Dispatcher>();

/** One attempt, as the worker makes it, to a third party's `url` (`guard`) or an operator's (none). */
function send(url: string, options: { guard?: UrlPolicy; resolveHost?: Resolve; timeoutMs?: number } = {}) {
  const { guard, resolveHost, timeoutMs = 60_000 } = options;
  const key = resolveHost ?? guard ?? opened;
  let connections = opened.get(key);
  if (!connections) {
    connections = openConnections({
      ...(guard && { guard }),
      ...(resolveHost && { resolveHost }),
      timeoutMs,
    });
    opened.set(key, connections);
    cleanups.push(async () => {
      opened.delete(key);
      await connections!.destroy();
    });
  }
  return sendDelivery(
    { id: `msg_${'0'.repeat(32)}`, url, payload: PAYLOAD, attempts: 1, createdAt: new Date() },
    { connections, sign: webhookSigner(secret), timeoutMs, abort: new AbortController().signal },
  );
}

/** A resolver whose answer the test changes: what a DNS name under an attacker's control does. */
function rebindingResolver(address: string) {
  const resolver: { address: string; resolve: Resolve } = {
    address,
    resolve: async () => [{ address: resolver.address, family: resolver.address.includes(':') ? 6 : 4 }],
  };
  return resolver;
}

/** A TCP listener on loopback that counts what reaches it: connections and bytes. It never answers. */
async function startTcpCounter() {
  const sockets = new Set<Socket>();
  const counted = { connections: 0, bytes: 0 };
  const server = createTcpServer((socket) => {
    sockets.add(socket);
    counted.connections += 1;
    socket.on('data', (chunk) => {
      counted.bytes += chunk.length;
    });
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  });
  return { port: (server.address() as AddressInfo).port, counted };
}

/** A node:http receiver on loopback answering with `handle`; counts connections and requests. */
async function startHttpReceiver(handle: (req: IncomingMessage, res: ServerResponse) => void) {
  const counted = { connections: 0, requests: 0 };
  const server = createHttpServer((req, res) => {
    counted.requests += 1;
    handle(req, res);
  });
  server.on('connection', () => {
    counted.connections += 1;
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  const { port } = server.address() as AddressInfo;
  return { port, url: `http://127.0.0.1:${port}`, counted };
}

describe('delivery to a registered endpoint (sendDelivery with a guard)', () => {
  it('refuses a name that resolved to a public address at registration and to loopback at delivery (DNS rebinding): nothing reaches the receiver', async () => {
    const receiver = await startTcpCounter();
    const dns = rebindingResolver('93.184.215.14');
    const url = `https://hooks.example:${receiver.port}/hook`;
    await expect(checkEndpointUrl(url, STRICT, dns.resolve)).resolves.toBeUndefined();

    dns.address = '127.0.0.1';
    expect(await send(url, { guard: STRICT, resolveHost: dns.resolve })).toStrictEqual({
      ok: false,
      abandoned: false,
      error: 'refused: hooks.example resolved to a non-public address',
    });
    for (const address of ['::ffff:127.0.0.1', '169.254.169.254', '10.0.0.1']) {
      dns.address = address;
      expect(await send(url, { guard: STRICT, resolveHost: dns.resolve })).toStrictEqual({
        ok: false,
        abandoned: false,
        error: 'refused: hooks.example resolved to a non-public address',
      });
    }
    await sleep(200);
    expect(receiver.counted).toStrictEqual({ connections: 0, bytes: 0 });
  });

  it('refuses a name when any of its addresses is not public', async () => {
    const receiver = await startTcpCounter();
    const resolveHost: Resolve = async () => [
      { address: '93.184.215.14', family: 4 },
      { address: '127.0.0.1', family: 4 },
    ];
    expect(
      await send(`http://hooks.example:${receiver.port}/`, { guard: STRICT, resolveHost }),
    ).toMatchObject({
      ok: false,
      error: 'refused: hooks.example resolved to a non-public address',
    });
    await sleep(200);
    expect(receiver.counted).toStrictEqual({ connections: 0, bytes: 0 });
  });

  it('checks an IP literal, which no lookup sees, before connecting: the receiver is not even connected to', async () => {
    const receiver = await startTcpCounter();
    expect(
      await send(`http://127.0.0.1:${receiver.port}/hook`, { guard: STRICT, timeoutMs: 5_000 }),
    ).toStrictEqual({
      ok: false,
      abandoned: false,
      error: 'refused: 127.0.0.1 resolved to a non-public address',
    });
    expect(
      await send(`http://[::ffff:7f00:1]:${receiver.port}/hook`, { guard: STRICT, timeoutMs: 5_000 }),
    ).toStrictEqual({
      ok: false,
      abandoned: false,
      error: 'refused: ::ffff:7f00:1 resolved to a non-public address',
    });
    await sleep(200);
    expect(receiver.counted).toStrictEqual({ connections: 0, bytes: 0 });
  });

  it('with allowPrivate, delivers to the same loopback receiver, by name or literal, over kept-alive connections', async () => {
    const receiver = await startReceiver(secret);
    cleanups.push(() => receiver.close());
    const dns = rebindingResolver('127.0.0.1');
    const byName = `http://hooks.example:${receiver.port}/by-name`;
    await expect(checkEndpointUrl(byName, PRIVATE_ALLOWED, dns.resolve)).resolves.toBeUndefined();
    expect(await send(byName, { guard: PRIVATE_ALLOWED, resolveHost: dns.resolve })).toStrictEqual({
      ok: true,
      status: 200,
    });
    expect(await send(`${receiver.url}/literal`, { guard: PRIVATE_ALLOWED })).toStrictEqual({
      ok: true,
      status: 200,
    });
    await sleep(200);
    expect(await send(`${receiver.url}/again`, { guard: PRIVATE_ALLOWED })).toStrictEqual({
      ok: true,
      status: 200,
    });
    expect(receiver.received.map(({ path, body, verified }) => ({ path, body, verified }))).toStrictEqual([
      { path: '/by-name', body: PAYLOAD, verified: true },
      { path: '/literal', body: PAYLOAD, verified: true },
      { path: '/again', body: PAYLOAD, verified: true },
    ]);
  });

  it('reuses a kept-alive connection for the next attempts', async () => {
    const receiver = await startHttpReceiver((_, res) => res.end('ok'));
    for (let i = 0; i < 3; i++) {
      expect(await send(`${receiver.url}/hook`, { guard: PRIVATE_ALLOWED })).toStrictEqual({
        ok: true,
        status: 200,
      });
      // The attempt settles on the status line; the connection is free once the body is read.
      await sleep(100);
    }
    expect(receiver.counted).toStrictEqual({ connections: 1, requests: 3 });
  });
});

describe('what every delivery keeps to', () => {
  it.each([
    ['a registered endpoint', PRIVATE_ALLOWED],
    ["an operator's WEBHOOK_URLS", undefined],
  ])('does not follow a redirect, for %s: the target gets nothing', async (_, guard) => {
    const target = await startHttpReceiver((_, res) => res.end());
    for (const status of [301, 302, 303, 307, 308]) {
      const redirecting = await startHttpReceiver((_, res) => {
        res.writeHead(status, { location: `${target.url}/landing` });
        res.end();
      });
      expect(await send(`${redirecting.url}/hook`, guard ? { guard } : {})).toStrictEqual({
        ok: false,
        abandoned: false,
        error: `HTTP ${status}`,
        status,
      });
      expect(redirecting.counted.requests).toBe(1);
    }
    await sleep(200);
    expect(target.counted).toStrictEqual({ connections: 0, requests: 0 });
  });

  it.each([
    { to: 'a registered endpoint', guard: PRIVATE_ALLOWED, status: 200 },
    { to: 'a registered endpoint', guard: PRIVATE_ALLOWED, status: 503 },
    { to: "an operator's WEBHOOK_URLS", guard: undefined, status: 200 },
  ])(
    'reads at most MAX_ANSWER_BYTES of an endless answer from $to, then cuts the connection; the status ($status) decides',
    async ({ guard, status }) => {
      const receiver = await startEndlessReceiver(status);
      const started = performance.now();
      // Without the cap the connection would stay open until this timeout.
      const outcome = await send(`${receiver.url}/hook`, { ...(guard && { guard }), timeoutMs: 120_000 });
      expect(outcome).toStrictEqual(
        status === 200
          ? { ok: true, status }
          : { ok: false, abandoned: false, error: `HTTP ${status}`, status },
      );
      expect((await receiver.closed()) - started).toBeLessThan(20_000);
      expect(receiver.answered.written).toBeGreaterThan(MAX_ANSWER_BYTES);
    },
  );

  it('the built api (dist/main.js) cuts an endless answer from a WEBHOOK_URLS subscriber after 64 KiB, long before WEBHOOK_TIMEOUT_MS', async () => {
    const receiver = await startEndlessReceiver(200);
    const api = await startApiProcess({
      env: {
        WEBHOOK_URLS: `${receiver.url}/hook`,
        WEBHOOK_SECRET: secret,
        WEBHOOK_POLL_INTERVAL_MS: '50',
        WEBHOOK_TIMEOUT_MS: '120000',
        WEBHOOK_LEASE_MS: '240000',
      },
    });
    cleanups.push(async () => {
      await api.stop();
      api.cleanup();
    });
    const created = performance.now();
    expect((await postPlant(api.url, PAYLOAD)).status).toBe(200);
    const [delivered] = await waitForLogs(api, 'webhook delivered', 1, 20_000);
    expect(delivered).toMatchObject({ url: receiver.url, status: 200, attempt: 1 });
    expect((await receiver.closed()) - created).toBeLessThan(20_000);
    expect(receiver.answered.written).toBeGreaterThan(MAX_ANSWER_BYTES);
  });
});

/**
 * A receiver that answers `status` and then streams its body for as long as the connection stays
 * open (up to 1 GiB, so that a broken test ends). `closed()` resolves with when the connection
 * closed, rejecting after 20 s.
 */
async function startEndlessReceiver(status: number) {
  const answered = { written: 0, closedAt: 0 };
  const receiver = await startHttpReceiver((_, res) => {
    res.writeHead(status, { 'content-type': 'text/plain' });
    const chunk = Buffer.alloc(16 * 1024, 'x');
    const pump = () => {
      let room = true;
      while (room && !res.destroyed && answered.written < 1024 ** 3) {
        room = res.write(chunk);
        answered.written += chunk.length;
      }
    };
    res.on('drain', pump);
    res.on('close', () => {
      answered.closedAt = performance.now();
    });
    pump();
  });
  return {
    url: receiver.url,
    answered,
    async closed() {
      const deadline = performance.now() + 20_000;
      while (answered.closedAt === 0) {
        if (performance.now() > deadline)
          throw new Error("the receiver's answer is still being read after 20 s");
        await sleep(20);
      }
      return answered.closedAt;
    },
  };
}
