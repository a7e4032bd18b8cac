import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import superjson from 'superjson';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiProcess, START_NODE_ARGS, startApiProcess } from '../support/api-process.ts';
import { JSON_HEADERS, TOKEN } from '../support/http.ts';
import { type SeedPlant, type TestStoreInstance, testStores } from '../support/stores.ts';

/**
 * Issue 11's attacks on the built service, as `pnpm start` runs it: 1,000 plants of 60,000
 * characters, then concurrent full pages, tRPC batches of lists and an oversized batch of creates.
 * The service must survive with its resident memory under 300 MiB, answering the probe and a
 * normal create within 2 s throughout.
 */
const PLANTS = 1_000;
const NAME_LENGTH = 60_000;
const ATTACK_MS = 6_000;
const PROBE_EVERY_MS = 200;
const MAX_ANSWER_MS = 2_000;
const MAX_RSS_MIB = 300;

/** The attacker has a valid token of its own; the rate limiter is off, so only the bounds hold. */
const ATTACKER = `${TOKEN}-attacker`;

/**
 * Resident memory of a process, from /proc: the peak so far (VmHWM) and now (VmRSS), in MiB;
 * `undefined` once the process is gone.
 */
function memoryMiB(pid: number): { peak: number; now: number } | undefined {
  let status: string;
  try {
    status = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return undefined;
  }
  const kib = (field: string) => new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1];
  const [peak, now] = [kib('VmHWM'), kib('VmRSS')];
  return peak === undefined || now === undefined
    ? undefined
    : { peak: Number(peak) / 1024, now: Number(now) / 1024 };
}

/** tRPC's GET form of a batch of `calls` list queries, as httpBatchLink sends them. */
function listBatchPath(calls: number): string {
  const inputs = Object.fromEntries(
    Array.from({ length: calls }, (_, i) => [i, superjson.serialize({ limit: 1000 })]),
  );
  const paths = Array(calls).fill('plants.list').join(',');
  return `/trpc/${paths}?batch=1&input=${encodeURIComponent(JSON.stringify(inputs))}`;
}

/** A POST batch of 500 creates: a body well under 64 KiB. */
function createBatch(): { path: string; body: string } {
  const inputs = Object.fromEntries(
    Array.from({ length: 500 }, (_, i) => [
      i,
      superjson.serialize({ id: 10_000_000n + BigInt(i), name: 'x' }),
    ]),
  );
  return {
    path: `/trpc/${Array(500).fill('plants.create').join(',')}?batch=1`,
    body: JSON.stringify(inputs),
  };
}

describe.each(testStores())('abuse of the built service on $name', (testStore) => {
  let store: TestStoreInstance;
  let api: ApiProcess;

  beforeAll(async () => {
    // The attack runs against the same flags users run.
    const start = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).scripts
      .start;
    for (const flag of START_NODE_ARGS) expect(start).toContain(flag);
    store = await testStore.setup();
    api = await startApiProcess({
      env: { ...store.env, API_TOKENS: `${TOKEN},${ATTACKER}`, RATE_LIMIT_MAX: '0' },
    });
    // Written past the api (it now refuses such names), as rows from before the limits would be.
    const seed: SeedPlant[] = Array.from({ length: PLANTS }, (_, i) => ({
      id: BigInt(i + 1),
      name: `${i} `.padEnd(NAME_LENGTH, 'x'),
    }));
    await store.insertPlants(seed);
  }, 60_000);

  afterAll(async () => {
    await api?.stop();
    api?.cleanup();
    await store?.teardown();
  });

  it('survives, under 300 MiB, answering /healthz and a create within 2 s throughout', async () => {
    const base = api.url;
    const deadline = performance.now() + ATTACK_MS;
    const { path: batchPath, body: batchBody } = createBatch();
    const attacker = runAttacker({
      base,
      token: ATTACKER,
      ms: ATTACK_MS,
      loops: [
        // Issue 11 sent 4 concurrent full pages; 10 here, more than the 8 list slots.
        { what: 'GET /plants?limit=1000', path: '/plants?limit=1000', concurrency: 10 },
        // 16 calls: each one's share of the page budget holds one of these plants.
        { what: '16 x plants.list', path: listBatchPath(16), concurrency: 2 },
        { what: '100 x plants.list', path: listBatchPath(100), concurrency: 1 },
        { what: '200 x plants.list', path: listBatchPath(200), concurrency: 1 },
        { what: '500 x plants.create', path: batchPath, method: 'POST', body: batchBody, concurrency: 1 },
      ],
    });

    // The victim: a probe and a normal create every 200 ms, each timed.
    const worst = { health: 0, create: 0 };
    const probes: { health: number; create: number }[] = [];
    let id = 20_000_000;
    const victim = (async () => {
      while (performance.now() < deadline) {
        const started = performance.now();
        const [health, create] = await Promise.all([
          timed(() => fetch(`${base}/healthz`)),
          timed(() =>
            fetch(`${base}/plants`, {
              method: 'POST',
              headers: JSON_HEADERS,
              body: `{"id":${id++},"name":"Fern"}`,
            }),
          ),
        ]);
        probes.push({ health: health.status, create: create.status });
        worst.health = Math.max(worst.health, health.ms);
        worst.create = Math.max(worst.create, create.ms);
        await sleep(Math.max(0, PROBE_EVERY_MS - (performance.now() - started)));
      }
    })();

    let exit: string | undefined;
    api.child.once('exit', (code, signal) => {
      exit = `exited with ${code ?? signal}`;
    });
    let sampledPeak = 0;
    const sampler = setInterval(() => {
      sampledPeak = Math.max(sampledPeak, memoryMiB(api.child.pid!)?.now ?? 0);
    }, 50);
    const [counts] = await Promise.all([attacker, victim]);
    clearInterval(sampler);
    const statuses = new Map(Object.entries(counts));

    const memory = memoryMiB(api.child.pid!);
    expect(exit).toBeUndefined();
    expect(memory).toBeDefined();
    const peak = memory!.peak;
    console.log(
      `[abuse ${testStore.name}] peak RSS ${peak.toFixed(1)} MiB (VmHWM; sampled ${sampledPeak.toFixed(1)}), ` +
        `worst /healthz ${worst.health.toFixed(0)} ms, worst create ${worst.create.toFixed(0)} ms, ` +
        `${probes.length} probes; attack answers ${JSON.stringify(Object.fromEntries([...statuses].sort()))}`,
    );
    expect(peak).toBeLessThan(MAX_RSS_MIB);
    expect(worst.health).toBeLessThan(MAX_ANSWER_MS);
    expect(worst.create).toBeLessThan(MAX_ANSWER_MS);
    // The probes ran throughout: each answered within MAX_ANSWER_MS, so at least one in every such
    // span (a count of a quarter of the schedule failed a loaded CI run at 7 of 7.5, the worst answer 1.3 s).
    expect(probes.length).toBeGreaterThanOrEqual(ATTACK_MS / MAX_ANSWER_MS);
    expect(probes.every((probe) => probe.health === 200 && probe.create === 200)).toBe(true);
    // Every attack was answered (a 200 page, a busy 503 or a refused 413), never dropped.
    expect([...statuses.keys()].filter((key) => !/ (200|503|413)$/.test(key))).toEqual([]);
    expect(statuses.get('500 x plants.create 413')).toBeGreaterThan(0);
    expect(statuses.get('200 x plants.list 413')).toBeGreaterThan(0);
    expect(statuses.get('GET /plants?limit=1000 200')).toBeGreaterThan(0);
    expect(statuses.get('16 x plants.list 200')).toBeGreaterThan(0);
    // No create of a refused batch ran.
    expect((await store.ids()).filter((plant) => plant >= 10_000_000n && plant < 20_000_000n)).toEqual([]);
    // Still serving afterwards.
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
  }, 60_000);
});

/** Runs test/support/attacker.mjs in a process of its own; resolves with its answer counts. */
function runAttacker(plan: object): Promise<Record<string, number>> {
  const script = new URL('../support/attacker.mjs', import.meta.url).pathname;
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [script, JSON.stringify(plan)], { maxBuffer: 1 << 20 }, (error, stdout) =>
      error ? reject(error) : resolve(JSON.parse(stdout)),
    );
  });
}

async function timed(request: () => Promise<Response>): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  try {
    const res = await request();
    await res.arrayBuffer();
    return { status: res.status, ms: performance.now() - started };
  } catch {
    return { status: 0, ms: performance.now() - started };
  }
}
