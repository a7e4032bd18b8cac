import { execFile } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { parseJson } from '@plant-store/schema';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.ts';
import { openStore } from '../../src/store/open-store.ts';
import { newPlantWebhook } from '../../src/webhooks/event.ts';
import { EXPIRED_ERROR } from '../../src/webhooks/retention.ts';
import { startDeliveryWorker } from '../../src/webhooks/worker.ts';
import type { RunningApi } from '../support/in-process.ts';
import { startBlackHole } from '../support/black-hole.ts';
import { postPlant, send, TOKEN } from '../support/http.ts';
import { type LogLine, logLines, waitForLogs } from '../support/logs.ts';
import { testStores } from '../support/stores.ts';
import { FAST, listFailed, webhookFixtures } from '../support/webhook-fixtures.ts';
import { freePort, newWebhookSecret } from '../support/webhook-receiver.ts';

const MAIN = new URL('../../dist/main.js', import.meta.url).pathname;
// Attempts still hanging at the end of a test need not hold its teardown for 10 s.
const { defer, setup, startApi, receiver } = webhookFixtures({ SHUTDOWN_GRACE_MS: '500' });

async function metricsText(api: RunningApi): Promise<string> {
  const answer = await send(`${api.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
  expect(answer.status).toBe(200);
  return answer.text;
}

async function until(condition: () => Promise<boolean> | boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await condition())) {
    if (performance.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await sleep(50);
  }
}

describe.each(testStores())('webhook subscribers are isolated from each other on $name', (testStore) => {
  it('a subscriber that never answers delays no other: the healthy one gets every delivery within 4 s of its create', async () => {
    const store = await setup(testStore);
    const secret = newWebhookSecret();
    const healthy = await receiver(secret);
    const blackHole = await startBlackHole();
    defer(() => blackHole.close());
    // Everything else at its default: WEBHOOK_TIMEOUT_MS 10 s, polls every second. 8 slots (fewer
    // than the creates made before the first timeout) show that the black hole holds no more.
    const api = await startApi({
      ...store.env,
      WEBHOOK_CONCURRENCY: '8',
      WEBHOOK_URLS: `${blackHole.url}/hook?token=partitioned, ${healthy.url}/hook`,
      WEBHOOK_SECRET: secret,
    });

    // One create every 400 ms for 12 s: past the first attempts' 10 s timeouts and the breaker opening.
    const created: { body: string; at: number }[] = [];
    let heldBeforeTimeouts: number | undefined;
    for (let i = 0; i < 30; i++) {
      const body = `{"id":${2n ** 62n + BigInt(i)},"name":"Fern ${i}"}`;
      const at = performance.now();
      expect((await postPlant(api.url, body)).status).toBe(200);
      created.push({ body, at });
      // Before its first attempt can time out, the black hole holds every slot it may hold.
      if (heldBeforeTimeouts === undefined && at - created[0]!.at > 9_000)
        heldBeforeTimeouts = blackHole.accepted;
      await sleep(400);
    }
    await healthy.waitFor((received) => received.length >= created.length, 5_000);

    const late = created.flatMap(({ body, at }) => {
      const delivered = healthy.received.find((request) => request.body === body);
      const ms = delivered === undefined ? Number.POSITIVE_INFINITY : Math.round(delivered.at - at);
      // A poll (1 s) and an attempt; 4 s leaves room for a loaded machine (2.5 s seen with three test
      // files and a build on 2 cores), and is far below the 10 s a slot held by the black hole lasts.
      return ms < 4_000 ? [] : [{ body, ms }];
    });
    expect(late).toStrictEqual([]);
    expect(healthy.received).toHaveLength(created.length);
    expect(healthy.received.every((request) => request.verified && request.path === '/hook')).toBe(true);

    // The black hole held its own 8 slots (WEBHOOK_CONCURRENCY), no more; after 5 timeouts in a row
    // its breaker opens.
    expect(heldBeforeTimeouts).toBe(8);
    const [opened] = await waitForLogs(api, 'webhook subscriber circuit opened', 1, 10_000);
    expect(opened).toMatchObject({
      level: 40,
      url: blackHole.url,
      failures: 5,
      retryInMs: 30_000,
    });
    const failedAttempts = logLines(api, 'webhook attempt failed');
    expect(failedAttempts.length).toBeGreaterThanOrEqual(5);
    expect(failedAttempts.every((line) => line.error === 'no answer within 10000 ms')).toBe(true);
    const metrics = await metricsText(api);
    expect(metrics).toContain('\nplant_store_webhook_circuits_open 1\n');
    // The black hole's deliveries all wait, pending; the healthy subscriber's are delivered.
    const pending = (await store.deliveries()).filter((delivery) => delivery.status === 'pending');
    expect(pending).toHaveLength(created.length);
    expect(pending.every((delivery) => delivery.url.startsWith(blackHole.url))).toBe(true);
    expect(metrics).toContain(`\nplant_store_webhook_outbox_depth{status="pending"} ${pending.length}\n`);
  }, 90_000);

  it("opens a subscriber's breaker after WEBHOOK_BREAKER_FAILURES failures in a row, tries once per cooldown, and closes on success", async () => {
    const store = await setup(testStore);
    const secret = newWebhookSecret();
    let answer = 503;
    const subscriber = await receiver(secret, { answer: () => answer });
    const api = await startApi({
      ...store.env,
      ...FAST,
      WEBHOOK_CONCURRENCY: '1',
      WEBHOOK_BREAKER_FAILURES: '3',
      WEBHOOK_BREAKER_COOLDOWN_MS: '1500',
      WEBHOOK_URLS: `${subscriber.url}/hook`,
      WEBHOOK_SECRET: secret,
    });
    for (const id of [1, 2, 3, 4]) {
      expect((await postPlant(api.url, `{"id":${id},"name":"Fern"}`)).status).toBe(200);
    }

    const [opened] = await waitForLogs(api, 'webhook subscriber circuit opened');
    expect(opened).toMatchObject({ level: 40, url: subscriber.url, failures: 3, retryInMs: 1_500 });
    expect(subscriber.received).toHaveLength(3);
    // Open: nothing is attempted during the cooldown.
    await sleep(1_000);
    expect(subscriber.received).toHaveLength(3);
    // Half-open: one trial; it fails, and the breaker opens again for another cooldown.
    await subscriber.waitFor((received) => received.length === 4, 3_000);
    await waitForLogs(api, 'webhook subscriber circuit opened', 2);
    await sleep(300);
    expect(subscriber.received).toHaveLength(4);
    answer = 200;
    // The next trial succeeds: the breaker closes and everything pending is delivered.
    const [closed] = await waitForLogs(api, 'webhook subscriber circuit closed', 1, 5_000);
    expect(closed).toMatchObject({ level: 30, url: subscriber.url });
    await until(async () => (await store.deliveries()).every((delivery) => delivery.status === 'delivered'));

    const at = subscriber.received.map((request) => request.at);
    expect(at[3]! - at[2]!).toBeGreaterThan(1_400);
    expect(at[4]! - at[3]!).toBeGreaterThan(1_400);
    const delivered = new Set(subscriber.received.slice(4).map((request) => request.body));
    expect(delivered).toStrictEqual(new Set([1, 2, 3, 4].map((id) => `{"id":${id},"name":"Fern"}`)));
    // Failures while the breaker was open would have used up attempts: there were none.
    expect(subscriber.received).toHaveLength(4 + 4);
    expect(logLines(api, 'webhook delivery failed')).toStrictEqual([]);
    expect(await metricsText(api)).toContain('\nplant_store_webhook_circuits_open 0\n');
  }, 30_000);

  it("fails what an open breaker held back past the retry schedule's span, and nothing of a healthy subscriber's", async () => {
    const store = await setup(testStore);
    const secret = newWebhookSecret();
    const dead = await receiver(secret, { answer: () => 503 });
    const healthy = await receiver(secret);
    // The schedule: waits of at most 50 and 100 ms, 3 attempts of at most 1 s: a span of 3,150 ms.
    const api = await startApi({
      ...store.env,
      ...FAST,
      WEBHOOK_MAX_ATTEMPTS: '3',
      WEBHOOK_BREAKER_FAILURES: '2',
      WEBHOOK_BREAKER_COOLDOWN_MS: '600000',
      WEBHOOK_URLS: `${dead.url}/dead, ${healthy.url}/ok`,
      WEBHOOK_SECRET: secret,
    });
    for (const id of [1, 2])
      expect((await postPlant(api.url, `{"id":${id},"name":"Fern"}`)).status).toBe(200);
    await waitForLogs(api, 'webhook subscriber circuit opened');
    for (const id of [3, 4, 5, 6, 7])
      expect((await postPlant(api.url, `{"id":${id},"name":"Fern"}`)).status).toBe(200);
    const deadOnes = async () => (await store.deliveries()).filter((d) => d.url.endsWith('/dead'));
    // Within the span: held, pending, their attempts unspent.
    await sleep(1_000);
    expect((await deadOnes()).map((d) => d.status)).toStrictEqual(Array(7).fill('pending'));
    expect(dead.received.length).toBe(2);

    await until(async () => (await deadOnes()).every((d) => d.status === 'failed'), 15_000);
    const expired = () => logLines(api, 'webhook deliveries expired');
    await until(() => expired().reduce((sum, line) => sum + (line.expired as number), 0) >= 7, 5_000);
    for (const line of expired()) expect(line).toMatchObject({ level: 50, url: dead.url, afterMs: 3_150 });
    expect(expired().reduce((sum, line) => sum + (line.expired as number), 0)).toBe(7);
    expect(dead.received.length).toBe(2);
    expect(healthy.received).toHaveLength(7);
    expect(
      (await store.deliveries()).filter((d) => d.url.endsWith('/ok')).map((d) => d.status),
    ).toStrictEqual(Array(7).fill('delivered'));
    const { stdout } = await listFailed(store.env);
    const listed = stdout
      .trim()
      .split('\n')
      .map((line) => parseJson(line) as { lastError: string });
    expect(listed.map((one) => one.lastError)).toStrictEqual(Array(7).fill(EXPIRED_ERROR));
    expect(await metricsText(api)).toContain('\nplant_store_webhook_deliveries_failed_total 7\n');
  }, 30_000);

  it('deletes delivered deliveries after WEBHOOK_RETENTION_MS and keeps failed ones; metrics count pending and failed', async () => {
    const store = await setup(testStore);
    const secret = newWebhookSecret();
    const subscriber = await receiver(secret, {
      answer: (request) => (request.path === '/fail' ? 503 : 200),
    });
    const env = {
      ...store.env,
      ...FAST,
      WEBHOOK_MAX_ATTEMPTS: '1',
      WEBHOOK_RETENTION_MS: '1000',
      WEBHOOK_URLS: `${subscriber.url}/ok,${subscriber.url}/fail`,
      WEBHOOK_SECRET: secret,
    };
    const api = await startApi(env);
    for (const id of [1, 2, 3, 4]) {
      expect((await postPlant(api.url, `{"id":${id},"name":"Fern"}`)).status).toBe(200);
    }
    await waitForLogs(api, 'webhook delivered', 4);
    await waitForLogs(api, 'webhook delivery failed', 4);
    expect((await store.deliveries()).filter((delivery) => delivery.status === 'delivered')).toHaveLength(4);

    await until(async () => (await store.deliveries()).length === 4, 10_000);
    const kept = await store.deliveries();
    expect(kept.every((delivery) => delivery.status === 'failed' && delivery.url.endsWith('/fail'))).toBe(
      true,
    );
    // The log line follows the deletions it reports, maybe after the rows are seen gone.
    const pruned = () => logLines(api, 'webhook deliveries pruned');
    await until(() => pruned().reduce((sum, line) => sum + (line.deleted as number), 0) >= 4, 5_000);
    expect(pruned().every((line) => line.level === 30 && line.retentionMs === 1_000)).toBe(true);
    expect(pruned().reduce((sum, line) => sum + (line.deleted as number), 0)).toBe(4);

    const { stderr } = await listFailed(store.env);
    expect(stderr).toBe('4 of 4 failed deliveries listed (0 pending, 0 delivered)\n');
    const metrics = await metricsText(api);
    expect(metrics).toContain('\nplant_store_webhook_outbox_depth{status="pending"} 0\n');
    expect(metrics).toContain('\nplant_store_webhook_outbox_depth{status="failed"} 4\n');
    expect(metrics).not.toContain('plant_store_webhook_outbox_depth{status="delivered"}');
  }, 30_000);

  it("never writes a URL's credentials, path or query into an error, a log line or `webhooks failed`", async () => {
    const store = await setup(testStore);
    const port = await freePort();
    // An outbox row for a URL with credentials, as an older version could have enqueued, and a
    // path that carries a secret as Slack's incoming webhooks do.
    const leaked = `http://plant-user:secret-pass@127.0.0.1:${port}/services/T0/B0/path-secret?token=query-secret`;
    const direct = await openStore(loadConfig({ ...store.env, API_TOKENS: TOKEN }).store);
    const fern = { id: 7n, name: 'Fern' };
    expect(
      await direct.create(fern, { outbox: { deliveries: newPlantWebhook([leaked]).deliveriesFor(fern) } }),
    ).toBeTypeOf('bigint');
    await direct.close();

    const secret = newWebhookSecret();
    const subscriber = await receiver(secret);
    const api = await startApi({
      ...store.env,
      ...FAST,
      WEBHOOK_MAX_ATTEMPTS: '2',
      WEBHOOK_URLS: `${subscriber.url}/hook`,
      WEBHOOK_SECRET: secret,
    });
    const [failed] = await waitForLogs(api, 'webhook delivery failed');
    const redacted = `http://127.0.0.1:${port}`;
    const error = `request failed (Request cannot be constructed from a URL that includes credentials: ${redacted})`;
    expect(failed).toMatchObject({ level: 50, url: redacted, attempt: 2, error });

    const { stdout, stderr } = await listFailed(store.env);
    expect(parseJson(stdout.trim())).toMatchObject({ url: redacted, lastError: error, attempts: 2n });
    // `last_error` is stored redacted too (the row's url is what is sent, and never shown).
    expect(await store.rows('SELECT last_error FROM webhook_deliveries')).toStrictEqual([
      { last_error: error },
    ]);
    for (const text of [api.logs.join('\n'), stdout, stderr, await metricsText(api)]) {
      for (const secretPart of ['plant-user', 'secret-pass', 'path-secret', 'query-secret']) {
        expect(text).not.toContain(secretPart);
      }
    }
  });
});

describe.each(testStores())('the delivery worker prunes on $name', (testStore) => {
  it('deletes delivered rows past the retention, 1,000 per statement, until none is left', async () => {
    const instance = await setup(testStore);
    const url = 'http://127.0.0.1:9/hook';
    const config = loadConfig({
      ...instance.env,
      API_TOKENS: TOKEN,
      WEBHOOK_URLS: url,
      WEBHOOK_SECRET: newWebhookSecret(),
      WEBHOOK_RETENTION_MS: '0',
    });
    const store = await openStore(config.store);
    defer(() => store.close());
    const webhook = newPlantWebhook(config.webhooks!.urls);
    const ids = Array.from({ length: 2_500 }, (_, i) => BigInt(i));
    for (let i = 0; i < ids.length; i += 500) {
      const plants = ids.slice(i, i + 500).map((id) => ({ id, name: 'Fern' }));
      await Promise.all(
        plants.map((plant) => store.create(plant, { outbox: { deliveries: webhook.deliveriesFor(plant) } })),
      );
    }
    const claimed = await store.deliveries.claim({ url, limit: 3_000, leaseMs: 60_000 });
    await store.deliveries.markDelivered(claimed.map((delivery) => delivery.id));
    expect(await store.deliveries.counts()).toStrictEqual({ pending: 0, delivered: 2_500, failed: 0 });
    await sleep(20);

    const lines: LogLine[] = [];
    const log = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) });
    const worker = startDeliveryWorker({ outbox: store.deliveries, config: config.webhooks!, log });
    try {
      await until(() => lines.some((line) => line.msg === 'webhook deliveries pruned'));
    } finally {
      await worker.stop(0);
    }
    // One run: three statements (1,000 + 1,000 + 500), one line.
    expect(lines.filter((line) => line.msg === 'webhook deliveries pruned')).toMatchObject([
      { level: 30, deleted: 2_500, retentionMs: 0 },
    ]);
    expect(await store.deliveries.counts()).toStrictEqual({ pending: 0, delivered: 0, failed: 0 });
  });
});

describe.each(testStores())('the delivery worker claims ahead of its slots on $name', (testStore) => {
  /** A worker over a store holding one delivery for each of 100 plants to `url`. */
  async function workerWith100(url: string, secret: string, env: Record<string, string>) {
    const instance = await setup(testStore);
    const config = loadConfig({
      ...instance.env,
      API_TOKENS: TOKEN,
      WEBHOOK_URLS: url,
      WEBHOOK_SECRET: secret,
      WEBHOOK_POLL_INTERVAL_MS: '50',
      WEBHOOK_CONCURRENCY: '2',
      ...env,
    });
    const store = await openStore(config.store);
    defer(() => store.close());
    const webhook = newPlantWebhook([url]);
    const plants = Array.from({ length: 100 }, (_, i) => ({ id: BigInt(i), name: 'Fern' }));
    await Promise.all(
      plants.map((plant) => store.create(plant, { outbox: { deliveries: webhook.deliveriesFor(plant) } })),
    );
    const lines: LogLine[] = [];
    const log = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) });
    const worker = startDeliveryWorker({ outbox: store.deliveries, config: config.webhooks!, log });
    defer(() => worker.stop(0));
    const claimAll = () => store.deliveries.claim({ url, limit: 1_000, leaseMs: 60_000 });
    return { store, worker, lines, claimAll };
  }

  it('holds every due delivery while 2 are attempted, and at shutdown hands back the rest with their attempts uncounted', async () => {
    const secret = newWebhookSecret();
    const subscriber = await receiver(secret, { answer: () => 'hang' });
    const { worker, lines, claimAll } = await workerWith100(`${subscriber.url}/hook`, secret, {});
    await subscriber.waitFor((received) => received.length === 2, 5_000);
    // One claim leased all 100 (not only the 2 free slots' worth): none is left to claim.
    expect(await claimAll()).toStrictEqual([]);

    await worker.stop(0);
    expect(subscriber.received).toHaveLength(2);
    expect(lines.filter((line) => line.msg === 'webhook attempt abandoned at shutdown')).toHaveLength(2);
    // Due at once: the 2 abandoned attempts counted, the 98 never attempted not.
    const again = await claimAll();
    expect(again).toHaveLength(100);
    const attempted = new Set(subscriber.received.map((request) => request.id));
    for (const delivery of again) expect(delivery.attempts).toBe(attempted.has(delivery.id) ? 2 : 1);
  });

  it("hands back the deliveries it holds, their attempts uncounted, when the subscriber's breaker opens", async () => {
    const secret = newWebhookSecret();
    const subscriber = await receiver(secret, { answer: () => 503 });
    const { lines, claimAll } = await workerWith100(`${subscriber.url}/hook`, secret, {
      WEBHOOK_BREAKER_FAILURES: '2',
      WEBHOOK_BREAKER_COOLDOWN_MS: '60000',
    });
    await until(() => lines.some((line) => line.msg === 'webhook subscriber circuit opened'), 5_000);
    // Released at once rather than at their leases' end (60 s); the attempted ones wait out their backoff.
    const released = new Map<string, number>();
    await until(async () => {
      for (const delivery of await claimAll()) released.set(delivery.id, delivery.attempts);
      return released.size + subscriber.received.length >= 100;
    }, 5_000);
    const attempted = new Set(subscriber.received.map((request) => request.id));
    expect(attempted.size).toBeGreaterThanOrEqual(2);
    expect(attempted.size).toBeLessThanOrEqual(4);
    for (const [id, attempts] of released) expect(attempts).toBe(attempted.has(id) ? 2 : 1);
    expect([...released.keys()].filter((id) => !attempted.has(id))).toHaveLength(100 - attempted.size);
  });
});

describe('start-up', () => {
  it('refuses WEBHOOK_URLS with credentials: exit 2, one line naming the variable, the URL not repeated', async () => {
    const result = await promisify(execFile)(process.execPath, [MAIN], {
      env: {
        PATH: process.env.PATH ?? '',
        API_TOKENS: TOKEN,
        DATABASE_URL: 'file:/tmp/never-used/plants.db',
        WEBHOOK_URLS: 'https://hooks.example/ok,https://plant-user:pa55word@hooks.example/hook',
        WEBHOOK_SECRET: newWebhookSecret(),
      },
      timeout: 10_000,
    }).then(
      () => ({ code: 0, stderr: '' }),
      (error: { code: number; stderr: string }) => error,
    );
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      'Invalid configuration: WEBHOOK_URLS must not carry credentials (user:password@); subscribers authenticate deliveries by their signature\n',
    );
  });
});
