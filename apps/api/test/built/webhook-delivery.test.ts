import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseJson } from '@plant-store/schema';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { startApiProcess } from '../support/api-process.ts';
import { postPlant } from '../support/http.ts';
import { logLines, waitForLogs } from '../support/logs.ts';
import { postgresAvailable, postgresTestStore, testStores } from '../support/stores.ts';
import { FAST, listFailed, webhookFixtures } from '../support/webhook-fixtures.ts';
import { type Answer, freePort, newWebhookSecret, type Received } from '../support/webhook-receiver.ts';

const { defer, setup, startApi, receiver } = webhookFixtures();

const ids = (received: Received[]) => received.map((request) => request.id);

describe.each(testStores())('the new-plant webhook on $name', (testStore) => {
  /** An api (FAST) whose one WEBHOOK_URLS subscriber is a new receiver's `/hook`, answering `answer`. */
  async function withSubscriber(answer?: (request: Received, index: number) => Answer) {
    const store = await setup(testStore);
    const secret = newWebhookSecret();
    const subscriber = await receiver(secret, answer ? { answer } : {});
    const api = await startApi({
      ...store.env,
      ...FAST,
      WEBHOOK_URLS: `${subscriber.url}/hook`,
      WEBHOOK_SECRET: secret,
    });
    return { store, subscriber, api };
  }

  it('POSTs the NewPlant to every subscriber, exact int64 id, signed as Standard Webhooks describe', async () => {
    const store = await setup(testStore);
    const secret = newWebhookSecret();
    const subscriber = await receiver(secret);
    const api = await startApi({
      ...store.env,
      ...FAST,
      WEBHOOK_URLS: `${subscriber.url}/a, ${subscriber.url}/b`,
      WEBHOOK_SECRET: secret,
    });
    const sentAt = Date.now() / 1000;
    const created = await postPlant(
      api.url,
      '{"id":9223372036854775807,"name":"Monstera","tag":"aroid","ignored":true}',
    );
    expect(created.status).toBe(200);
    await subscriber.waitFor((received) => received.length === 2);
    await waitForLogs(api, 'webhook delivered', 2);

    const body = '{"id":9223372036854775807,"name":"Monstera","tag":"aroid"}';
    const [a, b] = [...subscriber.received].sort((x, y) => x.path.localeCompare(y.path));
    for (const [request, path] of [
      [a!, '/a'],
      [b!, '/b'],
    ] as const) {
      expect(request).toMatchObject({ path, body, contentType: 'application/json', verified: true });
      expect(request.id).toMatch(/^msg_[0-9a-f]{32}$/);
      expect(Math.abs(Number(request.timestamp) - sentAt)).toBeLessThan(30);
      expect(request.signature).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
      // Every delivery names its event type, the operator's subscribers' too.
      expect(request.event).toBe('plant.created');
    }
    expect(a!.id).not.toBe(b!.id);
    expect(parseJson(a!.body)).toStrictEqual({ id: 2n ** 63n - 1n, name: 'Monstera', tag: 'aroid' });
    // The signature is keyed with the secret: under another one it does not verify.
    const headers = {
      'webhook-id': a!.id,
      'webhook-timestamp': a!.timestamp,
      'webhook-signature': a!.signature,
    };
    expect(() => new Webhook(newWebhookSecret()).verify(a!.body, headers)).toThrow('No matching signature');

    expect((await store.deliveries()).map(({ id, status, attempts }) => ({ id, status, attempts }))).toEqual(
      expect.arrayContaining([
        { id: a!.id, status: 'delivered', attempts: 1 },
        { id: b!.id, status: 'delivered', attempts: 1 },
      ]),
    );
    expect(api.logs.join('\n')).not.toContain(secret.slice('whsec_'.length));
  });

  it('retries a failing receiver with the same webhook-id until it answers 2xx', async () => {
    const { store, subscriber, api } = await withSubscriber((_, index) => (index < 2 ? 500 : 204));
    expect((await postPlant(api.url, '{"id":1,"name":"Fern"}')).status).toBe(200);
    const [delivered] = await waitForLogs(api, 'webhook delivered');
    await sleep(300);

    expect(subscriber.received).toHaveLength(3);
    expect(new Set(ids(subscriber.received))).toStrictEqual(new Set([delivered!.webhookId]));
    expect(
      subscriber.received.every((request) => request.verified && request.body === '{"id":1,"name":"Fern"}'),
    ).toBe(true);
    expect(
      logLines(api, 'webhook attempt failed').map(({ attempt, error, level }) => ({ attempt, error, level })),
    ).toStrictEqual([
      { attempt: 1, error: 'HTTP 500', level: 40 },
      { attempt: 2, error: 'HTTP 500', level: 40 },
    ]);
    expect(delivered).toMatchObject({ attempt: 3, status: 204 });
    expect(await store.deliveries()).toMatchObject([{ status: 'delivered', attempts: 3 }]);
  });

  it('gives up after WEBHOOK_MAX_ATTEMPTS: keeps the delivery as failed, logs it, and `webhooks failed` lists it', async () => {
    const store = await setup(testStore);
    const secret = newWebhookSecret();
    const subscriber = await receiver(secret, { answer: () => 503 });
    const env = {
      ...store.env,
      ...FAST,
      WEBHOOK_URLS: `${subscriber.url}/hook?token=subscriber-secret`,
      WEBHOOK_SECRET: secret,
      WEBHOOK_MAX_ATTEMPTS: '3',
    };
    const api = await startApi(env);
    expect((await postPlant(api.url, '{"id":9007199254740993,"name":"Fern"}')).status).toBe(200);
    const [failed] = await waitForLogs(api, 'webhook delivery failed');
    const webhookId = subscriber.received[0]!.id;
    // Only the URL's origin is logged (its path and query may carry the subscriber's secret), with a
    // digest that tells two URLs of one origin apart.
    expect(failed).toMatchObject({
      level: 50,
      webhookId,
      attempt: 3,
      error: 'HTTP 503',
      url: subscriber.url,
      urlDigest: createHash('sha256')
        .update(`${subscriber.url}/hook?token=subscriber-secret`)
        .digest('hex')
        .slice(0, 12),
    });
    await sleep(300);
    expect(ids(subscriber.received)).toStrictEqual([webhookId, webhookId, webhookId]);
    expect(await store.deliveries()).toMatchObject([{ id: webhookId, status: 'failed', attempts: 3 }]);

    const { stdout, stderr } = await listFailed(store.env);
    expect(stderr).toBe('1 of 1 failed deliveries listed (0 pending, 0 delivered)\n');
    const lines = stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('"payload":{"id":9007199254740993,"name":"Fern"}');
    expect(parseJson(lines[0]!)).toStrictEqual({
      webhookId,
      url: subscriber.url,
      attempts: 3n,
      lastError: 'HTTP 503',
      createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      failedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      payload: { id: 9007199254740993n, name: 'Fern' },
    });
  });

  it('enqueues nothing for a duplicate create (409)', async () => {
    const { store, subscriber, api } = await withSubscriber();
    expect((await postPlant(api.url, '{"id":5,"name":"Fern"}')).status).toBe(200);
    expect((await postPlant(api.url, '{"id":5,"name":"Cactus"}')).status).toBe(409);
    await waitForLogs(api, 'webhook delivered');
    await sleep(300);
    expect(subscriber.received.map((request) => request.body)).toStrictEqual(['{"id":5,"name":"Fern"}']);
    expect(await store.deliveries()).toMatchObject([{ status: 'delivered', attempts: 1 }]);
  });

  it("sends a subscriber's next deliveries over the connection its first one opened, across idle polls", async () => {
    const { subscriber, api } = await withSubscriber();
    for (const [index, id] of [11, 12, 13].entries()) {
      expect((await postPlant(api.url, `{"id":${id},"name":"Fern"}`)).status).toBe(200);
      await subscriber.waitFor((received) => received.length === index + 1);
      // Ten polls (WEBHOOK_POLL_INTERVAL_MS=50) find nothing pending in between.
      await sleep(500);
    }
    expect(subscriber.received.map(({ body, connection }) => [body, connection])).toStrictEqual([
      ['{"id":11,"name":"Fern"}', 1],
      ['{"id":12,"name":"Fern"}', 1],
      ['{"id":13,"name":"Fern"}', 1],
    ]);
  });

  it('delivers after an api restart what it could not deliver while the receiver was down', async () => {
    const store = await setup(testStore);
    const secret = newWebhookSecret();
    const port = await freePort();
    const env = {
      ...store.env,
      ...FAST,
      WEBHOOK_URLS: `http://127.0.0.1:${port}/hook`,
      WEBHOOK_SECRET: secret,
    };
    const first = await startApiProcess({ env });
    defer(() => first.cleanup());
    expect((await postPlant(first.url, '{"id":7,"name":"Fern"}')).status).toBe(200);
    const [refused] = await waitForLogs(first, 'webhook attempt failed');
    expect(refused).toMatchObject({ attempt: 1, error: 'connection failed (ECONNREFUSED)' });
    expect(await first.stop()).toBe(0);
    const [pending] = await store.deliveries();
    expect(pending).toMatchObject({ id: refused!.webhookId, status: 'pending' });

    const subscriber = await receiver(secret, { port });
    const second = await startApi(env, first.dataDir);
    const [delivered] = await waitForLogs(second, 'webhook delivered');
    expect(subscriber.received).toMatchObject([
      { id: refused!.webhookId, body: '{"id":7,"name":"Fern"}', verified: true },
    ]);
    expect(delivered).toMatchObject({ webhookId: refused!.webhookId, attempt: pending!.attempts + 1 });
    expect(await store.deliveries()).toMatchObject([{ status: 'delivered' }]);
  });

  it('attempts again, once its lease ends, a delivery whose instance was killed mid-attempt', async () => {
    const store = await setup(testStore);
    const secret = newWebhookSecret();
    // The first request is never answered: the instance that sent it dies waiting.
    const subscriber = await receiver(secret, { answer: (_, index) => (index === 0 ? 'hang' : 200) });
    const env = { ...store.env, ...FAST, WEBHOOK_URLS: `${subscriber.url}/hook`, WEBHOOK_SECRET: secret };
    const doomed = await startApiProcess({ env });
    defer(() => doomed.cleanup());
    expect((await postPlant(doomed.url, '{"id":8,"name":"Fern"}')).status).toBe(200);
    await subscriber.waitFor((received) => received.length === 1);
    await doomed.kill();

    const survivor = await startApi(env);
    const [delivered] = await waitForLogs(survivor, 'webhook delivered');
    const [lost, retried] = subscriber.received;
    expect(retried).toMatchObject({ id: lost!.id, body: '{"id":8,"name":"Fern"}', verified: true });
    expect(delivered).toMatchObject({ webhookId: lost!.id, attempt: 2 });
    // Not before the lease (1500 ms) taken with the first attempt ran out.
    expect(retried!.at - lost!.at).toBeGreaterThan(1_300);
    expect(await store.deliveries()).toMatchObject([{ status: 'delivered', attempts: 2 }]);
  });
});

describe.skipIf(!postgresAvailable())('the new-plant webhook with several instances on PostgreSQL', () => {
  it('two instances drain one outbox and deliver each event exactly once', async () => {
    const store = await setup(postgresTestStore);
    const secret = newWebhookSecret();
    // A slow receiver keeps both instances' attempts in flight at once.
    const subscriber = await receiver(secret, { answer: () => sleep(20).then(() => 200) });
    const env = {
      ...store.env,
      ...FAST,
      WEBHOOK_POLL_INTERVAL_MS: '20',
      WEBHOOK_CONCURRENCY: '2',
      WEBHOOK_URLS: `${subscriber.url}/hook`,
      WEBHOOK_SECRET: secret,
    };
    const apis = [await startApi(env), await startApi(env)];
    const plants = Array.from({ length: 40 }, (_, i) => `{"id":${2n ** 53n + BigInt(i)},"name":"Fern"}`);
    const answers = await Promise.all(plants.map((body, i) => postPlant(apis[i % 2]!.url, body)));
    expect(answers.map((answer) => answer.status)).toStrictEqual(plants.map(() => 200));

    await subscriber.waitFor((received) => new Set(ids(received)).size === plants.length, 20_000);
    await sleep(500);
    expect(subscriber.received).toHaveLength(plants.length);
    expect(subscriber.received.map((request) => request.body).sort()).toStrictEqual([...plants].sort());
    expect(subscriber.received.every((request) => request.verified)).toBe(true);
    // Each delivery logged by exactly one of them. Not how many each: a claim takes up to 512 due
    // deliveries, so whichever instance polls first after the creates may take them all.
    const deliveredBy = apis.map((api) => logLines(api, 'webhook delivered').length);
    expect(deliveredBy[0]! + deliveredBy[1]!).toBe(plants.length);
    const stored = await store.deliveries();
    expect(stored.every((delivery) => delivery.status === 'delivered' && delivery.attempts === 1)).toBe(true);
  });
});
