import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { Writable } from 'node:stream';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.ts';
import { startServer } from '../../src/server.ts';
import { openStore } from '../../src/store/open-store.ts';
import { type PlantStore, StoreUnavailableError } from '../../src/store/contract.ts';
import { JSON_HEADERS, postPlant, send, TOKEN } from '../support/http.ts';
import { redisAvailable, redisUrl } from '../support/redis.ts';
import { type TestStoreInstance, testStores } from '../support/stores.ts';
import { newWebhookSecret } from '../support/webhook-receiver.ts';

/** A logger whose lines are kept, parsed, in `lines`. */
function memoryLog() {
  const lines: { msg: string; [key: string]: unknown }[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n')) if (line !== '') lines.push(JSON.parse(line));
      done();
    },
  });
  return { log: pino({ level: 'info' }, sink), lines };
}

/**
 * The server as main.ts starts it, on `store`'s database, with configuration from `env`; with a
 * secrets key, so that PostgreSQL logs no warning about webhook endpoints.
 */
async function start(store: TestStoreInstance, env: Record<string, string> = {}) {
  const config = loadConfig({
    ...store.env,
    HOST: '127.0.0.1',
    PORT: '0',
    API_TOKENS: TOKEN,
    WEBHOOK_SECRETS_KEY: randomBytes(32).toString('base64'),
    ...env,
  });
  const plants: PlantStore = await openStore(config.store);
  const { log, lines } = memoryLog();
  const running = await startServer(config, { store: plants, log });
  return { running, plants, lines };
}

/** Resolves once a listener can be bound on 127.0.0.1:`port` (and released again). */
function bindable(port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const probe = createNetServer();
    probe.once('error', reject);
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve()));
  });
}

describe.each(testStores())('startServer on $name, in this process', (testStore) => {
  it('serves over HTTP, and close() frees the port and closes the store; a restart reads what was written', async () => {
    const store = await testStore.setup();
    try {
      const first = await start(store);
      expect(first.running.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect((await postPlant(first.running.url, '{"id":7,"name":"Fern","tag":"green"}')).status).toBe(200);
      expect((await send(`${first.running.url}/readyz`)).status).toBe(200);
      // PORT=0: the OpenAPI document names the port actually listened on.
      const document = (await send(`${first.running.url}/openapi.json`)).json as {
        servers: { url: string }[];
      };
      expect(document.servers.map((server) => server.url)).toStrictEqual([first.running.url]);
      await first.running.close();

      expect(first.lines.map((line) => line.msg)).toStrictEqual([
        'listening',
        'request',
        'request',
        'request',
        'shutting down',
        'stopped',
      ]);
      expect(first.lines[0]).toMatchObject({ url: first.running.url });
      expect(first.lines[4]).toMatchObject({ signal: 'close' });
      // The store is closed: it answers nothing more.
      await expect(first.plants.ping()).rejects.toBeInstanceOf(StoreUnavailableError);
      // The port is free: nothing listens on it, and it can be bound again.
      await expect(fetch(`${first.running.url}/healthz`)).rejects.toThrow('fetch failed');
      const port = new URL(first.running.url).port;
      await bindable(Number(port));
      // Calling close() again changes nothing.
      await first.running.close();
      expect(first.lines).toHaveLength(6);

      const second = await start(store, { PORT: port });
      try {
        expect(second.running.url).toBe(first.running.url);
        const read = await send(`${second.running.url}/plants/7`, { headers: JSON_HEADERS });
        expect(read.status).toBe(200);
        expect(read.text).toBe('{"id":7,"name":"Fern","tag":"green","version":1}');
      } finally {
        await second.running.close();
      }
      expect(await store.ids()).toStrictEqual([7n]);
    } finally {
      await store.teardown();
    }
  });

  it('rejects when the port is taken, and leaves the store open for its caller', async () => {
    const store = await testStore.setup();
    try {
      const first = await start(store);
      const port = new URL(first.running.url).port;
      const config = loadConfig({ ...store.env, HOST: '127.0.0.1', PORT: port, API_TOKENS: TOKEN });
      const plants = await openStore(config.store);
      try {
        await expect(startServer(config, { store: plants, log: memoryLog().log })).rejects.toThrow(
          `listen EADDRINUSE: address already in use 127.0.0.1:${port}`,
        );
        await plants.ping();
      } finally {
        await plants.close();
        await first.running.close();
      }
    } finally {
      await store.teardown();
    }
  });

  it('close() lets a request in flight finish, and refuses new connections meanwhile', async () => {
    const store = await testStore.setup();
    try {
      const { running, lines } = await start(store);
      const body = '{"id":42,"name":"Moss"}';
      // The headers and half the body are sent: the request is in flight until the rest arrives.
      let answered: (value: { status: number; text: string }) => void = () => {};
      const answer = new Promise<{ status: number; text: string }>((resolve) => {
        answered = resolve;
      });
      const slow = request(`${running.url}/plants`, {
        method: 'POST',
        // Its own connection, closed after the answer (a kept-alive one would hold close() longer).
        agent: false,
        headers: { ...JSON_HEADERS, 'content-length': String(Buffer.byteLength(body)) },
      });
      slow.on('response', (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => {
          text += chunk;
        });
        res.on('end', () => answered({ status: res.statusCode ?? 0, text }));
      });
      slow.write(body.slice(0, 10));
      await new Promise((resolve) => setTimeout(resolve, 300));

      let closed = false;
      const closing = running.close().then(() => {
        closed = true;
      });
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(closed).toBe(false);
      await expect(fetch(`${running.url}/healthz`)).rejects.toThrow('fetch failed');

      slow.end(body.slice(10));
      expect(await answer).toStrictEqual({ status: 200, text: '{"name":"Moss"}' });
      await closing;
      // The request was answered, and logged, before the server stopped.
      expect(lines.map((line) => line.msg)).toStrictEqual([
        'listening',
        'shutting down',
        'request',
        'stopped',
      ]);
      expect(await store.ids()).toStrictEqual([42n]);
    } finally {
      await store.teardown();
    }
  });

  it.skipIf(!redisAvailable())(
    'wires Redis and the webhook worker when configured, and close() stops both',
    async () => {
      const store = await testStore.setup();
      try {
        const { running, lines } = await start(store, {
          REDIS_URL: redisUrl,
          // No plant is created, so nothing is sent to it.
          WEBHOOK_URLS: 'http://127.0.0.1:9/hook',
          WEBHOOK_SECRET: newWebhookSecret(),
        });
        while (!lines.some((line) => line.msg.startsWith('rate limits use redis'))) {
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        const metrics = await send(`${running.url}/metrics`, { headers: JSON_HEADERS });
        expect(metrics.text).toContain('\nplant_store_rate_limit_backend{backend="redis"} 1\n');
        await running.close();
        // A deliberate disconnect is not reported as Redis going away.
        expect(lines.map((line) => line.msg)).toStrictEqual([
          'listening',
          'webhook worker started',
          'rate limits use redis: counters are shared by every instance',
          'request',
          'shutting down',
          'stopped',
        ]);
        expect(lines[1]).toMatchObject({ subscribers: 1 });
      } finally {
        await store.teardown();
      }
    },
  );
});
