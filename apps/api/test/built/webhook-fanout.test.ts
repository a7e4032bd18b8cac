import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import type { RunningApi } from '../support/in-process.ts';
import { startBlackHole } from '../support/black-hole.ts';
import { JSON_HEADERS, postPlant, send } from '../support/http.ts';
import { testStores } from '../support/stores.ts';
import { FAST, webhookFixtures } from '../support/webhook-fixtures.ts';
import { freePort, type Receiver } from '../support/webhook-receiver.ts';

const { defer, setup, startApi, receiver } = webhookFixtures({ SHUTDOWN_GRACE_MS: '200' });
const SECRETS_KEY = randomBytes(32).toString('base64');
const HEALTHY = 5;
/** Half refuse connections (nothing listens on their port), half accept and never answer. */
const DEAD = 20;
const BURSTS = 3;
const PER_BURST = 40;

async function register(api: RunningApi, url: string): Promise<{ id: string; secret: string }> {
  const answer = await send(`${api.url}/webhook-endpoints`, {
    method: 'POST',
    headers: JSON_HEADERS,
    body: JSON.stringify({ url }),
  });
  expect(answer.status).toBe(201);
  return answer.json as { id: string; secret: string };
}

/**
 * Registers `HEALTHY` receivers and `dead` dead endpoints, creates `BURSTS` bursts of plants (each
 * a moment after the last, so the dead endpoints' retries are due while the next burst's first
 * attempts are), and answers each healthy delivery's commit-to-receipt time in ms.
 */
async function firstAttempts(testStore: Parameters<typeof setup>[0], dead: number): Promise<number[]> {
  const store = await setup(testStore);
  const api = await startApi({
    ...store.env,
    ...FAST,
    WEBHOOK_ALLOW_PRIVATE_URLS: '1',
    WEBHOOK_SECRETS_KEY: SECRETS_KEY,
    WEBHOOK_ENDPOINTS_PER_TOKEN: String(HEALTHY + DEAD),
    // No breaker opens: the dead endpoints keep failing and retrying (every 50-200 ms) all along,
    // so what the healthy ones get owes nothing to breakers.
    WEBHOOK_BREAKER_FAILURES: '1000',
  });
  const secrets: string[] = [];
  const healthy: Receiver[] = [];
  for (let i = 0; i < HEALTHY; i++) {
    healthy.push(await receiver(() => secrets[i]!));
    secrets.push((await register(api, `${healthy[i]!.url}/hook`)).secret);
  }
  const hole = await startBlackHole();
  defer(() => hole.close());
  for (let i = 0; i < dead; i++) {
    await register(
      api,
      i % 2 === 0 ? `http://127.0.0.1:${await freePort()}/refused` : `${hole.url}/hole/${i}`,
    );
  }
  const created = new Map<string, number>();
  let id = 0;
  for (let burst = 0; burst < BURSTS; burst++) {
    await Promise.all(
      Array.from({ length: PER_BURST }, async (_, i) => {
        const body = `{"id":${id + i + 1},"name":"Fern"}`;
        expect((await postPlant(api.url, body)).status).toBe(200);
        created.set(body, performance.now());
      }),
    );
    id += PER_BURST;
    await sleep(600);
  }
  // Every plant's delivery, counted once: on a loaded machine an attempt may outlast the timeout
  // and be sent again (at least once), and a count of requests then came short of the plants.
  const arrived = (received: { body: string }[]) => new Set(received.map((request) => request.body)).size;
  for (const hook of healthy) await hook.waitFor((received) => arrived(received) >= created.size, 20_000);
  return healthy.flatMap((hook) => {
    expect(hook.received.every((request) => request.verified)).toBe(true);
    expect(new Set(hook.received.map((request) => request.body))).toStrictEqual(new Set(created.keys()));
    return hook.received.map((request) => request.at - created.get(request.body)!);
  });
}

const max = (values: number[]) => Math.round(Math.max(...values));
const p = (values: number[], q: number) =>
  Math.round([...values].sort((a, b) => a - b)[Math.floor(values.length * q)]!);

describe.each(testStores())('dead endpoints and healthy ones on $name', (testStore) => {
  it("never lets dead endpoints' retries delay a healthy endpoint's first attempt", async () => {
    // Each healthy delivery arrives (every plant, checked above) within a bound close to the
    // healthy-only case. Before failing endpoints got one attempt a round, their retries (32 slots
    // each, failing in a hot loop) tripled the median (203-316 ms against 56-83): 2x + 100 ms.
    // And nothing waits for a dead endpoint's timeout (1 s): one that did would arrive at least
    // that much later than the slowest without them.
    const within = (alone: number[], beside: number[]) =>
      p(beside, 0.5) < p(alone, 0.5) * 2 + 100 && max(beside) < max(alone) + Number(FAST.WEBHOOK_TIMEOUT_MS);
    // A second pair when the first falls outside: on a loaded CI machine the other test files'
    // load alone once put one pair's medians 3x apart (359 against 119 ms), where the defect is
    // slower in every pair.
    let pair: { alone: number[]; beside: number[] } | undefined;
    for (
      let attempt = 0;
      attempt < 2 && (pair === undefined || !within(pair.alone, pair.beside));
      attempt++
    ) {
      const alone = await firstAttempts(testStore, 0);
      const beside = await firstAttempts(testStore, DEAD);
      console.log(
        `healthy only: p50 ${p(alone, 0.5)} p90 ${p(alone, 0.9)} max ${max(alone)} ms; beside ${DEAD} dead: p50 ${p(beside, 0.5)} p90 ${p(beside, 0.9)} max ${max(beside)} ms`,
      );
      pair = { alone, beside };
    }
    const { alone, beside } = pair!;
    expect(p(beside, 0.5)).toBeLessThan(p(alone, 0.5) * 2 + 100);
    expect(max(beside)).toBeLessThan(max(alone) + Number(FAST.WEBHOOK_TIMEOUT_MS));
  }, 180_000);
});

describe('many endpoints that never answer', () => {
  it('hold an equal share of ATTEMPTS_IN_ALL (2,048) each, not WEBHOOK_CONCURRENCY (32): 100 hold 2,000 sockets, not 3,200', async () => {
    const store = await setup(testStores()[0]!);
    const api = await startApi({
      ...store.env,
      WEBHOOK_ALLOW_PRIVATE_URLS: '1',
      WEBHOOK_SECRETS_KEY: SECRETS_KEY,
      WEBHOOK_ENDPOINTS_PER_TOKEN: '100',
      WEBHOOK_TIMEOUT_MS: '20000',
      WEBHOOK_LEASE_MS: '30000',
    });
    const hole = await startBlackHole();
    defer(() => hole.close());
    for (let i = 0; i < 100; i++) await register(api, `${hole.url}/hole/${i}`);
    for (let id = 1; id <= 40; id++)
      expect((await postPlant(api.url, `{"id":${id},"name":"Fern"}`)).status).toBe(200);
    const deadline = performance.now() + 15_000;
    while (hole.accepted < 2_000 && performance.now() < deadline) await sleep(100);
    await sleep(500);
    expect(hole.accepted).toBe(2_000);
  }, 60_000);
});
