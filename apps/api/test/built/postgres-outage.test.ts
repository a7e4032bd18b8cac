import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openPostgresStore } from '../../src/store/postgres/store.ts';
import { StoreUnavailableError } from '../../src/store/contract.ts';
import { startApiProcess } from '../support/api-process.ts';
import { errorBody, postPlant, send } from '../support/http.ts';
import { postgresAvailable, postgresTestStore, type TestStoreInstance } from '../support/stores.ts';
import { type Mode, type Proxy as TcpProxy, startProxy } from '../support/tcp-proxy.ts';

/** The api under test is configured with this bound on every store call. */
const TIMEOUT_MS = 1_000;
/** What we allow on top of it for scheduling on a loaded 2-core machine. The stated bound is their sum. */
const SLACK_MS = 1_500;
const UNAVAILABLE = errorBody(503, 'The store is unavailable; retry the request later.');

const viaProxy = (databaseUrl: string, port: number) => {
  const url = new URL(databaseUrl);
  url.host = `127.0.0.1:${port}`;
  return url.href;
};

const target = (databaseUrl: string) => {
  const url = new URL(databaseUrl);
  return { host: url.hostname, port: Number(url.port || 5432) };
};

describe.skipIf(!postgresAvailable())('PostgreSQL outages', () => {
  // Each test: a fresh database, and a proxy in front of it that the test can cut off.
  let store: TestStoreInstance;
  let proxy: TcpProxy;
  beforeEach(async () => {
    store = await postgresTestStore.setup();
    proxy = await startProxy(target(store.env.DATABASE_URL!));
  });
  afterEach(async () => {
    await proxy.close();
    await store.teardown();
  });

  it('fails every store call within the timeout while the server is cut off, and recovers without reopening', async () => {
    const plants = await openPostgresStore({
      url: viaProxy(store.env.DATABASE_URL!, proxy.port),
      poolSize: 2,
      timeoutMs: 500,
    });
    try {
      expect(await plants.create({ id: 1n, name: 'Fern' })).toBeTypeOf('bigint');
      for (const mode of ['blackhole', 'down'] as const) {
        proxy.setMode(mode);
        for (const call of [
          () => plants.create({ id: 2n, name: 'Moss' }),
          () => plants.get(1n),
          () => plants.list({ limit: 10 }),
          () => plants.ping(),
        ]) {
          const started = performance.now();
          await expect(call()).rejects.toBeInstanceOf(StoreUnavailableError);
          expect(performance.now() - started).toBeLessThan(500 + SLACK_MS);
        }
      }
      proxy.setMode('up');
      await plants.ping();
      expect(await plants.create({ id: 3n, name: 'Ivy' })).toBeTypeOf('bigint');
      expect(await plants.get(1n)).toStrictEqual({ id: 1n, name: 'Fern', version: expect.any(BigInt) });
    } finally {
      await plants.close();
    }
  });

  it('fails only the calls in flight when the server ends every connection, and holds no call past the timeout', async () => {
    const url = store.env.DATABASE_URL!;
    const database = new URL(url).pathname.slice(1);
    const plants = await openPostgresStore({ url, poolSize: 4, timeoutMs: 500 });
    const other = new pg.Client({ connectionString: url });
    await other.connect();
    try {
      // What a fast shutdown or a failover sends each backend: FATAL 57P01 "terminating connection".
      const terminate = () =>
        other.query(
          'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
          [database],
        );
      const ids = Array.from({ length: 120 }, (_, i) => BigInt(i + 1));
      const outcomes = await Promise.all(
        ids.map(async (id, i) => {
          if (i === 40 || i === 80) await terminate();
          try {
            return { id, created: await plants.create({ id, name: 'Fern' }) };
          } catch (error) {
            expect(error).toBeInstanceOf(StoreUnavailableError);
            return { id, created: undefined };
          }
        }),
      );
      const acknowledged = outcomes.filter((o) => typeof o.created === 'bigint').map((o) => o.id);
      expect(acknowledged.length).toBeGreaterThan(0);
      const stored = new Set(await store.ids());
      expect(acknowledged.filter((id) => !stored.has(id))).toStrictEqual([]);

      // Idle connections the server ended are dropped; the next calls open new ones.
      await terminate();
      await sleep(100);
      expect(await plants.create({ id: 1_000n, name: 'Ivy' })).toBeTypeOf('bigint');

      // A statement stuck behind a lock fails at the timeout, not later.
      await other.query('BEGIN');
      await other.query('LOCK TABLE plants IN ACCESS EXCLUSIVE MODE');
      const started = performance.now();
      await expect(plants.create({ id: 1_001n, name: 'Moss' })).rejects.toBeInstanceOf(StoreUnavailableError);
      expect(performance.now() - started).toBeLessThan(500 + SLACK_MS);
      await other.query('ROLLBACK');
      // A 503 says nothing about the outcome: the abandoned INSERT may still have committed once the
      // lock went (the server runs it for at most its statement_timeout). Retrying the same create
      // is the client's move: 200 (its version here) if it had not, 409 (false here) if it had.
      const retried = await plants.create({ id: 1_001n, name: 'Moss' });
      expect(retried === false || typeof retried === 'bigint').toBe(true);
      expect(await plants.get(1_001n)).toStrictEqual({
        id: 1_001n,
        name: 'Moss',
        version: expect.any(BigInt),
      });
    } finally {
      await other.end();
      await plants.close();
    }
  });

  it('answers 503 with an Error body, fast, while PostgreSQL is down or unreachable, and recovers without a restart', async () => {
    const api = await startApiProcess({
      env: {
        DATABASE_URL: viaProxy(store.env.DATABASE_URL!, proxy.port),
        DATABASE_POOL_SIZE: '4',
        DATABASE_TIMEOUT_MS: String(TIMEOUT_MS),
      },
    });
    type Sent = { id: bigint; status: number; text: string; start: number; end: number };
    const sent: Sent[] = [];
    const probes: { path: string; mode: Mode; status: number; text: string; ms: number }[] = [];
    const t0 = performance.now();
    const now = () => performance.now() - t0;
    let flowing = true;
    let nextId = 1n;
    // A steady, bounded flow: 6 clients, each pausing 25 ms between creates.
    const client = async () => {
      while (flowing) {
        const id = nextId++;
        const start = now();
        let status = 0;
        let text = '';
        try {
          ({ status, text } = await postPlant(api.url, `{"id":${id},"name":"Fern"}`));
        } catch (error) {
          text = String(error);
        }
        sent.push({ id, status, text, start, end: now() });
        await sleep(25);
      }
    };
    const probe = async (mode: Mode) => {
      for (const path of ['/healthz', '/readyz']) {
        const start = now();
        const { status, text } = await send(`${api.url}${path}`);
        probes.push({ path, mode, status, text, ms: now() - start });
      }
    };
    // [mode, from, to] in ms since t0.
    const phases: [Mode, number, number][] = [];
    const phase = async (mode: Mode, ms: number) => {
      const from = now();
      proxy.setMode(mode);
      await sleep(ms / 2);
      await probe(mode);
      await sleep(ms / 2);
      phases.push([mode, from, now()]);
    };

    try {
      const clients = Array.from({ length: 6 }, client);
      await phase('up', 600);
      await phase('down', 1_500);
      await phase('up', 1_500);
      await phase('blackhole', 2_500);
      await phase('up', 1_500);
      flowing = false;
      await Promise.all(clients);

      // Never a hang: every create was answered, within the stated bound, with 200 or a 503 Error body.
      expect(sent.filter((s) => s.status === 0)).toStrictEqual([]);
      expect(
        sent.filter((s) => s.status !== 200 && (s.status !== 503 || s.text !== UNAVAILABLE)),
      ).toStrictEqual([]);
      expect(Math.max(...sent.map((s) => s.end - s.start))).toBeLessThan(TIMEOUT_MS + SLACK_MS);

      const within = (mode: Mode, index: number, settleMs: number) => {
        const [, from, to] = phases.filter(([m]) => m === mode)[index]!;
        return sent.filter((s) => s.start >= from + settleMs && s.end <= to);
      };
      // Down: refused connections fail at once, not after the timeout.
      const down = within('down', 0, 100);
      expect(down.length).toBeGreaterThan(10);
      expect(down.every((s) => s.status === 503)).toBe(true);
      expect(Math.max(...down.map((s) => s.end - s.start))).toBeLessThan(750);
      // Unreachable (nothing answers): 503 once the timeout runs out.
      const blackhole = within('blackhole', 0, 100);
      expect(blackhole.length).toBeGreaterThan(3);
      expect(blackhole.every((s) => s.status === 503)).toBe(true);
      // Back up: the same process serves again with no restart, after a short settling.
      for (const index of [1, 2]) {
        const recovered = within('up', index, 500);
        expect(recovered.length).toBeGreaterThan(10);
        expect(recovered.filter((s) => s.status !== 200)).toStrictEqual([]);
      }

      // /healthz never depends on the store; /readyz follows it, with the same Error body.
      expect(probes.filter((p) => p.path === '/healthz').every((p) => p.status === 200)).toBe(true);
      for (const p of probes.filter((p) => p.path === '/readyz')) {
        expect({ mode: p.mode, status: p.status, text: p.text }).toStrictEqual(
          p.mode === 'up'
            ? { mode: p.mode, status: 200, text: '{"status":"ok"}' }
            : { mode: p.mode, status: 503, text: UNAVAILABLE },
        );
        expect(p.ms).toBeLessThan(TIMEOUT_MS + SLACK_MS);
      }

      expect(api.child.exitCode).toBeNull();
      expect(await api.stop()).toBe(0);
      // No 200 for a write that was not committed: every acknowledged id is stored. A 503'd create
      // may or may not have committed (the answer was lost); none that was never sent is stored.
      const stored = new Set(await store.ids());
      const acknowledged = sent.filter((s) => s.status === 200).map((s) => s.id);
      expect(acknowledged.filter((id) => !stored.has(id))).toStrictEqual([]);
      const sentIds = new Set(sent.map((s) => s.id));
      expect([...stored].filter((id) => !sentIds.has(id))).toStrictEqual([]);
    } finally {
      flowing = false;
      proxy.setMode('up');
      await api.stop();
      api.cleanup();
    }
  });
});
