/**
 * The README's start command under a supervisor: what its signals do to the service. A supervisor
 * sends SIGTERM to the command's process group (or to its main process alone) and, after a timeout,
 * SIGKILL to the group. Runs `npx -y pnpm@10.34.8 start` itself, as shipped.test.ts does, on a
 * free port and a store of its own.
 */
import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { postPlant, TOKEN } from '../support/http.ts';
import {
  describeProcess,
  killAll,
  type ProcessInfo,
  portRefuses,
  stillRunning,
} from '../support/processes.ts';
import { PNPM, type ShippedService, startShipped } from '../support/shipped.ts';
import { type TestStoreInstance, testStores } from '../support/stores.ts';
import { freePort } from '../support/webhook-receiver.ts';

const START = `${PNPM} start`;
/** What "stops" means for SIGKILL: nothing of the service runs and the port is free within this. */
const GONE_WITHIN_MS = 2_000;

/** The configuration both runs on one store share: the restart reuses the port and the store. */
function configuration(store: TestStoreInstance, port: number): Record<string, string> {
  // No rate limit: the load and the reads after the restart are one token's thousands of requests.
  return { ...store.env, API_TOKENS: TOKEN, PORT: String(port), RATE_LIMIT_MAX: '0' };
}

/** The pnpm process that runs the root `start` script: `node …/pnpm start` (under npx). */
function rootPnpm(service: ShippedService): ProcessInfo {
  const found = service
    .processes()
    .filter(({ args }) => args.length === 3 && /pnpm(\.c?js)?$/.test(args[1]!) && args[2] === 'start');
  expect(found.map(describeProcess)).toHaveLength(1);
  return found[0]!;
}

/**
 * A create that is in flight: its headers are sent and the api has begun it (it answered
 * `100 Continue`), its body is not. `finish()` sends the body; `answer` is the raw HTTP answer.
 */
async function createInFlight(
  port: number,
  id: bigint,
): Promise<{ finish(): void; answer: Promise<string> }> {
  const body = `{"id":${id},"name":"In flight"}`;
  const socket = connect(port, '127.0.0.1');
  let received = '';
  const answer = new Promise<string>((resolve, reject) => {
    socket.on('data', (chunk) => {
      received += chunk;
    });
    socket.once('close', () => resolve(received.replace('HTTP/1.1 100 Continue\r\n\r\n', '')));
    socket.once('error', reject);
  });
  socket.write(
    `POST /plants HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${TOKEN}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${body.length}\r\nExpect: 100-continue\r\n` +
      'Connection: close\r\n\r\n',
  );
  await expect.poll(() => received, { timeout: 10_000 }).toContain('HTTP/1.1 100 Continue\r\n\r\n');
  return { finish: () => socket.write(body), answer };
}

describe.each(testStores())(
  "the README's start command on $name, signalled as a supervisor does",
  (testStore) => {
    it('SIGKILL to its process group mid-load: within 2 s no process of it runs and the port is free; ' +
      'a restart on the same port serves every acknowledged create', async () => {
      const store = await testStore.setup();
      const port = await freePort();
      const env = configuration(store, port);
      const services: ShippedService[] = [];
      try {
        const first = await startShipped(START, { env });
        services.push(first);
        const acknowledged: bigint[] = [];
        let killed = false;
        let next = 9007199254740993n;
        const client = async () => {
          while (!killed) {
            const id = next++;
            try {
              const answer = await postPlant(first.url, `{"id":${id},"name":"Fern ${id}"}`);
              if (answer.status === 200 && answer.text === `{"name":"Fern ${id}"}`) acknowledged.push(id);
            } catch {
              // The connection died with the process: this create was not acknowledged.
            }
          }
        };
        const clients = Array.from({ length: 16 }, client);
        // Killed mid-load: once more than 100 creates were answered, however busy the machine is.
        const loaded = performance.now() + 20_000;
        while (acknowledged.length <= 100 && performance.now() < loaded) await sleep(20);
        const before = first.processes();
        expect(before.some(({ args }) => args.includes('dist/main.js'))).toBe(true);

        first.signal('SIGKILL');
        const killedAt = performance.now();
        killed = true;
        const state = async () => ({
          running: [...new Set([...stillRunning(before), ...first.processes()].map(describeProcess))],
          portFree: await portRefuses(port),
        });
        let after = await state();
        while (
          (after.running.length > 0 || !after.portFree) &&
          performance.now() - killedAt < GONE_WITHIN_MS
        ) {
          await sleep(50);
          after = await state();
        }
        const goneAfterMs = performance.now() - killedAt;
        expect(after).toEqual({ running: [], portFree: true });
        expect(goneAfterMs).toBeLessThanOrEqual(GONE_WITHIN_MS);
        await Promise.all(clients);
        expect(acknowledged.length).toBeGreaterThan(100);

        const second = await startShipped(START, { env });
        services.push(second);
        expect(second.url).toBe(`http://127.0.0.1:${port}`);
        const missing: string[] = [];
        const queue = [...acknowledged];
        const reader = async () => {
          for (let id = queue.pop(); id !== undefined; id = queue.pop()) {
            const answer = await fetch(`${second.url}/plants/${id}`, {
              headers: { authorization: `Bearer ${TOKEN}` },
            });
            const text = await answer.text();
            // As created, with the version its create committed.
            if (
              answer.status !== 200 ||
              !new RegExp(`^\\{"id":${id},"name":"Fern ${id}","version":[1-9][0-9]*\\}$`).test(text)
            )
              missing.push(`${id}: ${answer.status} ${text}`);
          }
        };
        await Promise.all(Array.from({ length: 8 }, reader));
        expect(missing).toEqual([]);
        console.log(
          `[supervisor ${testStore.name}] SIGKILL: ${before.length} processes and the port gone ` +
            `${goneAfterMs.toFixed(0)} ms after the signal; ${acknowledged.length} acknowledged creates ` +
            'all served after the restart',
        );
        await second.stop('SIGTERM');
      } finally {
        for (const service of services) killAll(service.pid);
        await store.teardown();
      }
    }, 600_000);

    const SIGNALS = [
      { signal: 'SIGTERM', target: 'its process group' },
      { signal: 'SIGINT', target: 'its process group' },
      { signal: 'SIGTERM', target: 'its pnpm process alone' },
      { signal: 'SIGINT', target: 'its pnpm process alone' },
    ] as const;

    it.each(SIGNALS)(
      '$signal to $target: the create in flight is answered and stored, `stopped` is logged, ' +
        'every process exits and the port is free',
      async ({ signal, target }) => {
        const store = await testStore.setup();
        const port = await freePort();
        let service: ShippedService | undefined;
        try {
          service = await startShipped(START, { env: configuration(store, port) });
          const id = 9007199254740993n;
          const create = await createInFlight(port, id);
          if (target === 'its process group') service.signal(signal);
          else process.kill(rootPnpm(service).pid, signal);
          const running = service;
          await expect
            .poll(() => running.logs.map((entry) => entry.msg), { timeout: 10_000 })
            .toContain('shutting down');
          create.finish();
          const answer = await create.answer;
          expect(answer).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
          expect(answer.slice(answer.indexOf('\r\n\r\n') + 4)).toBe('{"name":"In flight"}');

          await expect
            .poll(() => running.processes().map(describeProcess), { timeout: 15_000, interval: 100 })
            .toEqual([]);
          // The last lines may still be in the pipe when the last process is gone.
          await running.closed;
          expect(running.logs.map((entry) => entry.msg)).toContain('stopped');
          expect(running.logs.filter((entry) => Number(entry.level) >= 50)).toEqual([]);
          expect(await portRefuses(port)).toBe(true);
          // Signalled alone, pnpm passes the signal down to the api and exits with its status.
          if (target === 'its pnpm process alone')
            expect(await running.exited).toEqual({ code: 0, signal: null });
          expect(await store.ids()).toEqual([id]);
        } finally {
          if (service) killAll(service.pid);
          await store.teardown();
        }
      },
      300_000,
    );
  },
);
