import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { startApiProcess, runApiCommand } from '../support/api-process.ts';
import type { RunningApi } from '../support/in-process.ts';
import { errorBody, postPlant, send, TOKEN, TOKEN_NAME } from '../support/http.ts';
import { logLines, waitForLogs } from '../support/logs.ts';
import {
  postgresAvailable,
  postgresTestStore,
  testStores,
  type TestStoreInstance,
} from '../support/stores.ts';
import { FAST, webhookFixtures } from '../support/webhook-fixtures.ts';
import { freePort, type Received } from '../support/webhook-receiver.ts';

const { defer, setup, startApi, receiver } = webhookFixtures({ SHUTDOWN_GRACE_MS: '500' });
const SECRETS_KEY = randomBytes(32).toString('base64');
const HEADERS = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };

type Endpoint = { id: string; secret: string };

/** The environment of an api whose endpoints may be on loopback, with short delivery schedules. */
const endpointEnv = (store: TestStoreInstance, env: Record<string, string> = {}) => ({
  ...store.env,
  ...FAST,
  WEBHOOK_ALLOW_PRIVATE_URLS: '1',
  WEBHOOK_SECRETS_KEY: SECRETS_KEY,
  ...env,
});

async function register(api: Pick<RunningApi, 'url'>, url: string): Promise<Endpoint> {
  const answer = await send(`${api.url}/webhook-endpoints`, {
    method: 'POST',
    headers: HEADERS,
    body: JSON.stringify({ url }),
  });
  expect(answer.status).toBe(201);
  return answer.json as Endpoint;
}

async function deliveries(api: Pick<RunningApi, 'url'>, id: string) {
  const answer = await send(`${api.url}/webhook-endpoints/${id}/deliveries?limit=100`, { headers: HEADERS });
  expect(answer.status).toBe(200);
  return answer.json as {
    id: string;
    event: string;
    status: string;
    attempts: number;
    lastResponseCode: number | null;
    lastError: string | null;
    nextAttemptAt: string | null;
  }[];
}

/** Whether `request` verifies under `secret` with the receiver-side library. */
function verifies(request: Received, secret: string): boolean {
  try {
    new Webhook(secret).verify(
      request.body,
      {
        'webhook-id': request.id,
        'webhook-timestamp': request.timestamp,
        'webhook-signature': request.signature,
      },
      { jsonParse: false },
    );
    return true;
  } catch {
    return false;
  }
}

async function until(condition: () => Promise<boolean> | boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await condition())) {
    if (performance.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await sleep(50);
  }
}

describe.each(testStores())('deliveries to registered endpoints on $name', (testStore) => {
  it('fans every new plant out to every endpoint, each signed with its own secret, with webhook-event', async () => {
    const store = await setup(testStore);
    const endpoints: Record<string, Endpoint> = {};
    const hookA = await receiver(() => endpoints.a!.secret);
    const hookB = await receiver(() => endpoints.b!.secret);
    const api = await startApi(endpointEnv(store));
    endpoints.a = await register(api, `${hookA.url}/a`);
    endpoints.b = await register(api, `${hookB.url}/b`);
    const body = '{"id":9223372036854775807,"name":"Monstera","tag":"aroid"}';
    expect((await postPlant(api.url, body)).status).toBe(200);
    await hookA.waitFor((received) => received.length === 1);
    await hookB.waitFor((received) => received.length === 1);
    const [a, b] = [hookA.received[0]!, hookB.received[0]!];
    for (const request of [a, b]) {
      expect(request).toMatchObject({
        body,
        event: 'plant.created',
        verified: true,
        contentType: 'application/json',
      });
      expect(request.id).toMatch(/^msg_[0-9a-f]{32}$/);
      expect(request.signature).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    }
    expect(a.id).not.toBe(b.id);
    // Each endpoint's own secret: the other's does not verify it.
    expect(verifies(a, endpoints.b.secret)).toBe(false);
    expect(verifies(b, endpoints.a.secret)).toBe(false);
  });

  it('delivers verified (standardwebhooks), records 2xx codes, and pings with the ping payload', async () => {
    const store = await setup(testStore);
    let endpoint: Endpoint | undefined;
    const hook = await receiver(() => endpoint!.secret, { answer: () => 204 });
    const api = await startApi(endpointEnv(store));
    endpoint = await register(api, `${hook.url}/hook`);
    expect((await postPlant(api.url, '{"id":1,"name":"Fern"}')).status).toBe(200);
    const ping = await send(`${api.url}/webhook-endpoints/${endpoint.id}/ping`, {
      method: 'POST',
      headers: HEADERS,
    });
    expect(ping.status).toBe(202);
    await hook.waitFor((received) => received.length === 2);
    expect(hook.received.every((request) => request.verified)).toBe(true);
    const byEvent = Object.fromEntries(hook.received.map((request) => [request.event, request]));
    expect(byEvent['plant.created']!.body).toBe('{"id":1,"name":"Fern"}');
    const pinged = JSON.parse(byEvent['webhook.ping']!.body);
    expect(pinged).toMatchObject({ type: 'webhook.ping', endpointId: endpoint.id });
    expect(byEvent['webhook.ping']!.id).toBe((ping.json as { id: string }).id);
    await until(async () => (await deliveries(api, endpoint!.id)).every((d) => d.status === 'delivered'));
    const listed = await deliveries(api, endpoint.id);
    expect(
      listed.map(({ status, attempts, lastResponseCode, lastError, nextAttemptAt }) => ({
        status,
        attempts,
        lastResponseCode,
        lastError,
        nextAttemptAt,
      })),
    ).toStrictEqual([
      { status: 'delivered', attempts: 1, lastResponseCode: 204, lastError: null, nextAttemptAt: null },
      { status: 'delivered', attempts: 1, lastResponseCode: 204, lastError: null, nextAttemptAt: null },
    ]);
    expect(api.logs.join('\n')).not.toContain(endpoint.secret.slice('whsec_'.length));
  });

  it('signs with both secrets during the rotation overlap, and with the new one only after it', async () => {
    const store = await setup(testStore);
    let current = '';
    const hook = await receiver(() => current);
    const api = await startApi(endpointEnv(store, { WEBHOOK_SECRET_OVERLAP_MS: '2000' }));
    const endpoint = await register(api, `${hook.url}/hook`);
    const old = endpoint.secret;
    const rotated = await send(`${api.url}/webhook-endpoints/${endpoint.id}/rotate-secret`, {
      method: 'POST',
      headers: HEADERS,
    });
    const fresh = (rotated.json as { secret: string }).secret;
    current = fresh;
    expect((await postPlant(api.url, '{"id":1,"name":"During"}')).status).toBe(200);
    await hook.waitFor((received) => received.length === 1);
    const during = hook.received[0]!;
    expect(during.signature).toMatch(/^v1,\S+ v1,\S+$/);
    expect(verifies(during, fresh)).toBe(true);
    expect(verifies(during, old)).toBe(true);
    // Past the overlap, only the new secret signs.
    await sleep(2_500);
    expect((await postPlant(api.url, '{"id":2,"name":"After"}')).status).toBe(200);
    await hook.waitFor((received) => received.length === 2);
    const after = hook.received[1]!;
    expect(after.signature).toMatch(/^v1,\S+$/);
    expect(verifies(after, fresh)).toBe(true);
    expect(verifies(after, old)).toBe(false);
  });

  it('redelivers a failed delivery: the same webhook-id, pending and due now, a fresh schedule of attempts', async () => {
    const store = await setup(testStore);
    let endpoint: Endpoint | undefined;
    let answer = 500;
    const hook = await receiver(() => endpoint!.secret, { answer: () => answer });
    const api = await startApi(endpointEnv(store, { WEBHOOK_MAX_ATTEMPTS: '2' }));
    endpoint = await register(api, `${hook.url}/hook`);
    expect((await postPlant(api.url, '{"id":1,"name":"Fern"}')).status).toBe(200);
    await until(async () => (await deliveries(api, endpoint!.id))[0]?.status === 'failed');
    const [failed] = await deliveries(api, endpoint.id);
    expect(failed).toMatchObject({
      status: 'failed',
      attempts: 2,
      lastResponseCode: 500,
      lastError: 'HTTP 500',
    });
    expect(failed!.nextAttemptAt).toBeNull();
    expect(hook.received).toHaveLength(2);

    answer = 200;
    const redelivered = await send(
      `${api.url}/webhook-endpoints/${endpoint.id}/deliveries/${failed!.id}/redeliver`,
      { method: 'POST', headers: HEADERS },
    );
    expect(redelivered.status).toBe(202);
    expect(redelivered.json).toMatchObject({
      id: failed!.id,
      status: 'pending',
      attempts: 0,
      lastResponseCode: null,
      lastError: null,
    });
    await hook.waitFor((received) => received.length === 3);
    expect(hook.received[2]!.id).toBe(failed!.id);
    expect(hook.received[2]!.verified).toBe(true);
    await until(async () => (await deliveries(api, endpoint!.id))[0]?.status === 'delivered');
    expect((await deliveries(api, endpoint.id))[0]).toMatchObject({ attempts: 1, lastResponseCode: 200 });
    // Redelivering a delivered one works too; an unknown delivery is 404.
    const unknown = `msg_${'0'.repeat(32)}`;
    const missing = await send(
      `${api.url}/webhook-endpoints/${endpoint.id}/deliveries/${unknown}/redeliver`,
      {
        method: 'POST',
        headers: HEADERS,
      },
    );
    expect(missing.text).toBe(
      errorBody(404, `Webhook endpoint ${endpoint.id} has no delivery with id ${unknown}.`),
    );
  });

  it('delivers after an api restart what it could not deliver to an endpoint while the receiver was down', async () => {
    const store = await setup(testStore);
    const port = await freePort();
    const env = endpointEnv(store);
    const first = await startApiProcess({ env });
    defer(() => first.cleanup());
    const endpoint = await register(first, `http://127.0.0.1:${port}/hook`);
    expect((await postPlant(first.url, '{"id":7,"name":"Fern"}')).status).toBe(200);
    await until(async () => ((await deliveries(first, endpoint.id))[0]?.attempts ?? 0) >= 1);
    expect(await first.stop()).toBe(0);
    const [pending] = await store.deliveries();
    expect(pending).toMatchObject({ status: 'pending' });

    const hook = await receiver(endpoint.secret, { port });
    const second = await startApi(env, first.dataDir);
    await hook.waitFor((received) => received.length === 1);
    expect(hook.received).toMatchObject([
      { id: pending!.id, body: '{"id":7,"name":"Fern"}', verified: true, event: 'plant.created' },
    ]);
    await until(async () => (await deliveries(second, endpoint.id))[0]?.status === 'delivered');
    expect((await deliveries(second, endpoint.id))[0]).toMatchObject({
      id: pending!.id,
      lastResponseCode: 200,
      attempts: pending!.attempts + 1,
    });
  });

  it('fans out only with a committed plant: nothing for a duplicate id, and a keyed create fans out once', async () => {
    const store = await setup(testStore);
    const api = await startApi(endpointEnv(store, { WEBHOOK_POLL_INTERVAL_MS: '600000' }));
    // Nothing listens there, and the worker polls rarely: the rows stay as the creates left them.
    const a = await register(api, 'http://127.0.0.1:9/a');
    const b = await register(api, 'http://127.0.0.1:9/b');
    expect((await postPlant(api.url, '{"id":7,"name":"Fern"}')).status).toBe(200);
    expect((await postPlant(api.url, '{"id":7,"name":"Cactus"}')).status).toBe(409);
    const keyed = { ...HEADERS, 'idempotency-key': 'fan-out-once' };
    expect((await postPlant(api.url, '{"id":8,"name":"Moss"}', keyed)).status).toBe(200);
    expect((await postPlant(api.url, '{"id":8,"name":"Moss"}', keyed)).status).toBe(200);
    // Many concurrent creates (PostgreSQL: group-committed batches) each fan out with their plant.
    const many = await Promise.all(
      Array.from({ length: 20 }, (_, i) => postPlant(api.url, `{"id":${100 + i},"name":"P${i}"}`)),
    );
    expect(many.every((answer) => answer.status === 200)).toBe(true);
    const rows = await store.rows(
      "SELECT endpoint_id, payload FROM webhook_deliveries WHERE event = 'plant.created' ORDER BY endpoint_id, payload",
    );
    const expected = [
      '{"id":7,"name":"Fern"}',
      '{"id":8,"name":"Moss"}',
      ...Array.from({ length: 20 }, (_, i) => `{"id":${100 + i},"name":"P${i}"}`),
    ].sort();
    for (const endpoint of [a, b]) {
      expect(rows.filter((row) => row.endpoint_id === endpoint.id).map((row) => row.payload)).toStrictEqual(
        expected,
      );
    }
    expect(rows).toHaveLength(2 * expected.length);
  });

  it('deletes an endpoint with its deliveries: nothing more is sent to it', async () => {
    const store = await setup(testStore);
    let endpoint: Endpoint | undefined;
    const hook = await receiver(() => endpoint!.secret, { answer: () => 503 });
    // Retries far apart: the failed first attempts stay pending.
    const api = await startApi(
      endpointEnv(store, { WEBHOOK_BACKOFF_BASE_MS: '60000', WEBHOOK_BACKOFF_MAX_MS: '60000' }),
    );
    endpoint = await register(api, `${hook.url}/hook`);
    for (let i = 1; i <= 3; i++)
      expect((await postPlant(api.url, `{"id":${i},"name":"Fern"}`)).status).toBe(200);
    await hook.waitFor((received) => received.length >= 1);
    expect(
      (await store.rows(`SELECT id FROM webhook_deliveries WHERE endpoint_id = '${endpoint.id}'`)).length,
    ).toBe(3);
    const deleted = await send(`${api.url}/webhook-endpoints/${endpoint.id}`, {
      method: 'DELETE',
      headers: HEADERS,
    });
    expect(deleted.status).toBe(204);
    expect(
      await store.rows(`SELECT id FROM webhook_deliveries WHERE endpoint_id = '${endpoint.id}'`),
    ).toStrictEqual([]);
    const seen = hook.received.length;
    for (let i = 4; i <= 6; i++)
      expect((await postPlant(api.url, `{"id":${i},"name":"Moss"}`)).status).toBe(200);
    await sleep(1_500);
    expect(hook.received.length).toBe(seen);
    expect(await store.rows('SELECT id FROM webhook_deliveries')).toStrictEqual([]);
  });

  it('sends nothing more of what a worker had claimed for an endpoint once it is deleted', async () => {
    const store = await setup(testStore);
    let endpoint: Endpoint | undefined;
    // One attempt at a time, each answered after 500 ms: the worker holds the rest, claimed, in memory.
    const hook = await receiver(() => endpoint!.secret, {
      answer: async () => {
        await sleep(500);
        return 200;
      },
    });
    // A long lease, so the claimed ones stay fit to attempt for the whole test.
    const api = await startApi(
      endpointEnv(store, { WEBHOOK_CONCURRENCY: '1', WEBHOOK_TIMEOUT_MS: '2000', WEBHOOK_LEASE_MS: '20000' }),
    );
    endpoint = await register(api, `${hook.url}/hook`);
    const many = await Promise.all(
      Array.from({ length: 6 }, (_, i) => postPlant(api.url, `{"id":${i + 1},"name":"Fern"}`)),
    );
    expect(many.every((answer) => answer.status === 200)).toBe(true);
    await hook.waitFor((received) => received.length === 1);
    const deleted = await send(`${api.url}/webhook-endpoints/${endpoint.id}`, {
      method: 'DELETE',
      headers: HEADERS,
    });
    expect(deleted.status).toBe(204);
    await sleep(2_000);
    // The attempt in flight ends; at most one more had started before the worker saw the deletion.
    expect(hook.received.length).toBeLessThanOrEqual(2);
  });

  it('isolates endpoints from each other, even at the same URL: one that never answers delays no other', async () => {
    const store = await setup(testStore);
    let healthy: Endpoint | undefined;
    // One URL for both endpoints: requests that verify with the healthy one's secret get 200, the
    // others (the stuck endpoint's) never get an answer.
    const received = { healthy: 0, stuck: 0 };
    const server = createServer(async (req, res) => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const request = {
        id: String(req.headers['webhook-id']),
        timestamp: String(req.headers['webhook-timestamp']),
        signature: String(req.headers['webhook-signature']),
        body: Buffer.concat(chunks).toString('utf8'),
      } as Received;
      if (healthy !== undefined && verifies(request, healthy.secret)) {
        received.healthy += 1;
        res.end();
      } else received.stuck += 1;
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    defer(async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    });
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/same`;
    const api = await startApi(
      endpointEnv(store, {
        WEBHOOK_CONCURRENCY: '2',
        WEBHOOK_TIMEOUT_MS: '10000',
        WEBHOOK_LEASE_MS: '20000',
      }),
    );
    await register(api, url);
    healthy = await register(api, url);
    for (let id = 1; id <= 10; id++)
      expect((await postPlant(api.url, `{"id":${id},"name":"Fern"}`)).status).toBe(200);
    await until(
      async () => (await deliveries(api, healthy!.id)).filter((d) => d.status === 'delivered').length === 10,
      5_000,
    );
    expect(received.healthy).toBe(10);
    // The stuck endpoint holds its own two slots and no more.
    await until(() => received.stuck === 2);
    await sleep(300);
    expect(received.stuck).toBe(2);
  });
});

describe('webhook endpoints without a secrets key on PostgreSQL', () => {
  it.runIf(postgresAvailable())(
    'answers 503 naming WEBHOOK_SECRETS_KEY, warns at start-up, and plants keep working',
    async () => {
      const store = await setup(postgresTestStore);
      const api = await startApi(store.env);
      expect(
        logLines(
          api,
          'no WEBHOOK_SECRETS_KEY: webhook endpoint operations answer 503 and endpoints get no deliveries (plants work)',
        ),
      ).toHaveLength(1);
      const answer = await send(`${api.url}/webhook-endpoints`, { headers: HEADERS });
      expect(answer.status).toBe(503);
      expect(answer.text).toBe(
        errorBody(
          503,
          'Webhook endpoints are unavailable: the operator has not set WEBHOOK_SECRETS_KEY, which protects their secrets.',
        ),
      );
      expect((await postPlant(api.url, '{"id":1,"name":"Fern"}')).status).toBe(200);
    },
  );
});

describe('webhook endpoints in the built bundle', () => {
  it('registers, delivers a verified plant, and lists endpoints in the admin CLI without secrets', async () => {
    let endpoint: Endpoint | undefined;
    const hook = await receiver(() => endpoint!.secret);
    const api = await startApiProcess({
      env: { ...FAST, WEBHOOK_ALLOW_PRIVATE_URLS: '1', TOKEN_REFRESH_MS: '200' },
    });
    defer(async () => {
      await api.stop();
      api.cleanup();
    });
    endpoint = await register(api, `${hook.url}/hook?token=abc`);
    expect((await postPlant(api.url, '{"id":9007199254740993,"name":"Fern"}')).status).toBe(200);
    await hook.waitFor((received) => received.length === 1);
    expect(hook.received[0]).toMatchObject({
      verified: true,
      event: 'plant.created',
      body: '{"id":9007199254740993,"name":"Fern"}',
    });
    const [delivered] = await waitForLogs(api, 'webhook delivered');
    // The log names the endpoint by id and its URL by origin: a path or query can hold a secret.
    expect(delivered).toMatchObject({ url: hook.url, endpointId: endpoint.id, status: 200 });
    expect(api.logs.join('\n')).not.toContain('/hook');
    expect(api.logs.join('\n')).not.toContain('token=abc');
    const env = { DATABASE_URL: `file:${api.dataDir}/plants.db` };
    const { stdout } = await runApiCommand(['webhooks', 'endpoints'], env);
    const lines = stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      id: endpoint.id,
      owner: TOKEN_NAME,
      url: hook.url,
      description: null,
      disabled: null,
      pending: 0,
      failed: 0,
    });
    expect(Object.keys(lines[0])).toStrictEqual([
      'id',
      'owner',
      'url',
      'description',
      'createdAt',
      'disabled',
      'pending',
      'failed',
    ]);
    expect(stdout).not.toContain(endpoint.secret.slice('whsec_'.length));
    expect((await runApiCommand(['webhooks', 'endpoints', '--owner', 'someone-else'], env)).stdout).toBe('');

    // A token issued with the webhooks scope (and read, which registering needs) manages its own
    // endpoints and nothing else.
    const issued = (
      await runApiCommand(
        ['token', 'create', '--name', 'acme', '--scope', 'webhooks', '--scope', 'read'],
        env,
      )
    ).stdout.trim();
    const acme = { authorization: `Bearer ${issued}`, 'content-type': 'application/json' };
    await until(async () => (await send(`${api.url}/webhook-endpoints`, { headers: acme })).status === 200);
    expect((await send(`${api.url}/webhook-endpoints`, { headers: acme })).json).toStrictEqual([]);
    expect((await postPlant(api.url, '{"id":1,"name":"Fern"}', acme)).status).toBe(403);
    const own = await send(`${api.url}/webhook-endpoints`, {
      method: 'POST',
      headers: acme,
      body: JSON.stringify({ url: `${hook.url}/acme` }),
    });
    expect(own.status).toBe(201);
    const mine = await runApiCommand(['webhooks', 'endpoints', '--owner', 'acme'], env);
    expect(JSON.parse(mine.stdout)).toMatchObject({ id: (own.json as { id: string }).id, owner: 'acme' });
  });
});
