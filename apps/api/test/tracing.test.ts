/**
 * Traces from the built service (docs/tracing.md): `dist/main.js` with OTEL_EXPORTER_OTLP_ENDPOINT
 * pointing at a collector this test runs, in both OTLP/HTTP encodings and on both stores. The tree
 * is asserted as a collector receives it: the client's `traceparent` is the server span's parent,
 * store calls are its children, webhook attempts carry their span to the receiver, log lines carry
 * the ids, and no exported byte holds a secret.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiProcess, startApiProcess } from './support/api-process.ts';
import { JSON_HEADERS, postPlant, send, TOKEN } from './support/http.ts';
import {
  type OtlpReceiver,
  type ReceivedSpan,
  SpanKind,
  startOtlpReceiver,
} from './support/otlp-receiver.ts';
import { redisAvailable, redisUrl } from './support/redis.ts';
import {
  postgresAvailable,
  postgresTestStore,
  type TestStoreInstance,
  testStores,
} from './support/stores.ts';
import { newWebhookSecret, type Receiver, startReceiver } from './support/webhook-receiver.ts';

const WEBHOOK_SECRET = newWebhookSecret();
/** What a subscriber URL's path and query may hold (Slack's do): never in a span. */
const HOOK_PATH = '/hooks/T0SECRETPATH';
const HOOK_QUERY = 'key=SECRETQUERY';
const BODY_NAME = 'secret-body-name';

/** A client's span context, as its `traceparent` carries it. */
function clientContext(sampled = true) {
  const traceId = randomBytes(16).toString('hex');
  const spanId = randomBytes(8).toString('hex');
  return { traceId, spanId, traceparent: `00-${traceId}-${spanId}-${sampled ? '01' : '00'}` };
}

const byName = (spans: ReceivedSpan[], name: string, traceId?: string) =>
  spans.filter((span) => span.name === name && (traceId === undefined || span.traceId === traceId));

describe.each(['http/protobuf', 'http/json'])('traces over OTLP %s', (protocol) => {
  describe.each(testStores())('on $name', (testStore) => {
    let store: TestStoreInstance;
    let collector: OtlpReceiver;
    let hooks: Receiver;
    let api: ApiProcess;

    beforeAll(async () => {
      store = await testStore.setup();
      collector = await startOtlpReceiver();
      // The first attempt fails (500), the retry is delivered.
      hooks = await startReceiver(WEBHOOK_SECRET, { answer: (_, index) => (index === 0 ? 500 : 204) });
      api = await startApiProcess({
        env: {
          ...store.env,
          OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
          OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
          OTEL_SERVICE_NAME: 'plants-under-test',
          OTEL_BSP_SCHEDULE_DELAY: '50',
          WEBHOOK_URLS: `${hooks.url}${HOOK_PATH}?${HOOK_QUERY}`,
          WEBHOOK_SECRET,
          WEBHOOK_BACKOFF_BASE_MS: '10',
          WEBHOOK_BACKOFF_MAX_MS: '10',
          WEBHOOK_POLL_INTERVAL_MS: '50',
        },
      });
    });
    afterAll(async () => {
      await api?.stop();
      api?.cleanup();
      await Promise.all([collector?.close(), hooks?.close()]);
      await store?.teardown();
    });

    it('continues the client trace: server span, store span, log line, webhook attempts', async () => {
      const client = clientContext();
      const created = await postPlant(api.url, `{"id":7,"name":"${BODY_NAME}"}`, {
        ...JSON_HEADERS,
        traceparent: client.traceparent,
      });
      expect(created.status).toBe(200);
      await hooks.waitFor((received) => received.length === 2);

      const spans = await collector.waitFor(
        (all) =>
          byName(all, 'create', client.traceId).length === 1 &&
          byName(all, 'POST').length === 2 &&
          byName(all, 'commit').some((span) => span.links.some((link) => link.traceId === client.traceId)),
      );
      const [server] = byName(spans, 'POST /plants', client.traceId);
      expect(server).toMatchObject({
        parentSpanId: client.spanId,
        kind: SpanKind.server,
        service: 'plants-under-test',
        scope: 'plant-store-api',
        status: { code: 0 },
        attributes: {
          'http.request.method': 'POST',
          'http.route': '/plants',
          'url.path': '/plants',
          'url.scheme': 'http',
          'http.response.status_code': 200,
        },
      });
      const [create] = byName(spans, 'create', client.traceId);
      const system = testStore.name === 'postgres' ? 'postgresql' : 'sqlite';
      expect(create).toMatchObject({
        parentSpanId: server!.spanId,
        kind: SpanKind.client,
        attributes: { 'db.system': system, 'db.system.name': system, 'db.operation.name': 'create' },
      });
      expect(Object.keys(create!.attributes).sort()).toEqual([
        'db.operation.name',
        'db.system',
        'db.system.name',
      ]);

      // The access log line, written inside the server span.
      const line = api.logs
        .map((text) => JSON.parse(text) as Record<string, unknown>)
        .find((entry) => entry.msg === 'request' && entry.trace_id === client.traceId);
      expect(line).toMatchObject({ route: '/plants', span_id: server!.spanId, trace_flags: '01' });

      // Each attempt: a CLIENT span whose traceparent the receiver got.
      const attempts = byName(spans, 'POST');
      expect(hooks.received.map((request) => request.traceparent)).toEqual(
        attempts.map((span) => `00-${span.traceId}-${span.spanId}-01`),
      );
      const port = new URL(hooks.url).port;
      expect(attempts).toMatchObject([
        {
          kind: SpanKind.client,
          parentSpanId: '',
          status: { code: 2, message: 'HTTP 500' },
          attributes: {
            'http.request.method': 'POST',
            'server.address': '127.0.0.1',
            'server.port': Number(port),
            'url.scheme': 'http',
            'http.response.status_code': 500,
            'error.type': '500',
            'plant_store.webhook.attempt': 1,
          },
        },
        {
          kind: SpanKind.client,
          status: { code: 0 },
          attributes: {
            'http.response.status_code': 204,
            'plant_store.webhook.attempt': 2,
            'http.request.resend_count': 1,
          },
        },
      ]);
      expect(attempts[0]!.attributes['plant_store.webhook.id']).toBe(hooks.received[0]!.id);

      // The group commit that made the create durable: a root span, linked both ways with the create.
      const commits = byName(spans, 'commit').filter((span) =>
        span.links.some((link) => link.spanId === create!.spanId),
      );
      expect(commits).toHaveLength(1);
      const [commit] = commits;
      expect(commit).toMatchObject({
        parentSpanId: '',
        kind: SpanKind.client,
        status: { code: 0 },
        attributes: { 'db.system': system, 'db.system.name': system, 'db.operation.name': 'commit' },
      });
      expect(Object.keys(commit!.attributes).sort()).toEqual([
        'db.operation.batch.size',
        'db.operation.name',
        'db.system',
        'db.system.name',
      ]);
      // Writes of the worker may share the batch; the create's is the only traced one here.
      expect(commit!.attributes['db.operation.batch.size']).toBeGreaterThanOrEqual(1);
      expect(commit!.links).toEqual([{ traceId: client.traceId, spanId: create!.spanId }]);
      expect(create!.links).toEqual([{ traceId: commit!.traceId, spanId: commit!.spanId }]);
      // Each attempt, minutes later or not, links back to the create that enqueued its delivery.
      for (const attempt of attempts)
        expect(attempt.links).toEqual([{ traceId: client.traceId, spanId: create!.spanId }]);
    });

    it('names spans by route template and tRPC procedure, never by the raw path', async () => {
      const client = clientContext();
      const headers = { authorization: `Bearer ${TOKEN}`, traceparent: client.traceparent };
      expect((await send(`${api.url}/plants/7?secret=${BODY_NAME}`, { headers })).status).toBe(200);
      const trpc = await send(`${api.url}/trpc/plants.create`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify({ json: { id: '8', name: 'Fern' }, meta: { values: { id: ['bigint'] }, v: 1 } }),
      });
      expect(trpc.status).toBe(200);
      expect((await send(`${api.url}/plants/999`, { headers })).status).toBe(404);

      const spans = await collector.waitFor(
        (all) =>
          all.filter((span) => span.traceId === client.traceId && span.kind === SpanKind.server).length === 3,
      );
      const servers = spans.filter(
        (span) => span.traceId === client.traceId && span.kind === SpanKind.server,
      );
      expect(
        servers.map((span) => [span.name, span.attributes['http.route'], span.attributes['url.path']]),
      ).toEqual([
        ['GET /plants/{id}', '/plants/{id}', '/plants/7'],
        ['POST /trpc/plants.create', '/trpc/plants.create', '/trpc/plants.create'],
        ['GET /plants/{id}', '/plants/{id}', '/plants/999'],
      ]);
      // A 404 is the client's: the status stays unset.
      expect(servers[2]).toMatchObject({
        status: { code: 0 },
        attributes: { 'http.response.status_code': 404 },
      });
      const children = (server: ReceivedSpan) =>
        spans.filter((span) => span.parentSpanId === server.spanId).map((span) => span.name);
      expect(servers.map(children)).toEqual([['get'], ['create'], ['get']]);
    });

    it('records nothing for a client trace that is not sampled, and still logs its ids', async () => {
      const client = clientContext(false);
      const answer = await send(`${api.url}/plants/7`, {
        headers: { authorization: `Bearer ${TOKEN}`, traceparent: client.traceparent },
      });
      expect(answer.status).toBe(200);
      // A later sampled request, to know the earlier one's spans would have arrived by now.
      const marker = clientContext();
      await send(`${api.url}/plants/7`, {
        headers: { authorization: `Bearer ${TOKEN}`, traceparent: marker.traceparent },
      });
      await collector.waitFor((all) => byName(all, 'GET /plants/{id}', marker.traceId).length === 1);
      expect(collector.spans.filter((span) => span.traceId === client.traceId)).toEqual([]);
      const line = api.logs
        .map((text) => JSON.parse(text) as Record<string, unknown>)
        .find((entry) => entry.msg === 'request' && entry.trace_id === client.traceId);
      expect(line).toMatchObject({ trace_flags: '00' });
    });

    it('makes an `events fan-out` span when a stream receives events', async () => {
      const stream = new AbortController();
      const events = await fetch(`${api.url}/plants/events`, {
        headers: { authorization: `Bearer ${TOKEN}` },
        signal: stream.signal,
      });
      expect(events.status).toBe(200);
      await postPlant(api.url, '{"id":9,"name":"Fern"}');
      const spans = await collector.waitFor((all) =>
        byName(all, 'events fan-out').some((span) => span.attributes['plant_store.streams.count'] === 1),
      );
      const fanOut = byName(spans, 'events fan-out').find(
        (span) => span.attributes['plant_store.streams.count'] === 1,
      );
      expect(fanOut).toMatchObject({ kind: SpanKind.internal, parentSpanId: '' });
      expect(fanOut!.attributes['plant_store.events.count']).toBeGreaterThanOrEqual(1);
      stream.abort();
    });

    it('exports no token, secret, body, or webhook URL path or query', async () => {
      await collector.waitFor((all) => all.length > 0);
      const secrets = [
        TOKEN,
        WEBHOOK_SECRET,
        WEBHOOK_SECRET.slice('whsec_'.length),
        HOOK_PATH,
        'SECRETQUERY',
        BODY_NAME,
      ];
      for (const span of collector.spans) {
        for (const value of Object.values(span.attributes)) {
          for (const secret of secrets) expect(String(value), span.name).not.toContain(secret);
        }
      }
      // Nor anywhere else in what was sent (status messages, resource, events).
      for (const { raw } of collector.requests) {
        for (const secret of secrets) expect(raw.includes(Buffer.from(secret)), secret).toBe(false);
      }
      expect(collector.requests.every((request) => request.path === '/v1/traces')).toBe(true);
      expect(collector.requests[0]!.contentType).toBe(
        protocol === 'http/json' ? 'application/json' : 'application/x-protobuf',
      );
    });
  });
});

describe.runIf(redisAvailable())('traces with Redis rate limits (built service)', () => {
  let collector: OtlpReceiver;
  let api: ApiProcess;
  beforeAll(async () => {
    collector = await startOtlpReceiver();
    api = await startApiProcess({
      env: {
        OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
        OTEL_BSP_SCHEDULE_DELAY: '50',
        REDIS_URL: redisUrl,
        // Keys of their own, so another test's counters in the shared Redis never limit these requests.
        RATE_LIMIT_MAX: '1000000',
      },
    });
  });
  afterAll(async () => {
    await api?.stop();
    api?.cleanup();
    await collector?.close();
  });

  it("makes a CLIENT span per Redis command inside the request's span, without its arguments", async () => {
    const client = clientContext();
    while (!api.logs.some((line) => line.includes('rate limits use redis'))) await sleep(20);
    const answer = await send(`${api.url}/plants`, {
      headers: { authorization: `Bearer ${TOKEN}`, traceparent: client.traceparent },
    });
    expect(answer.status).toBe(200);
    const spans = await collector.waitFor((all) =>
      all.some((span) => span.traceId === client.traceId && span.attributes['db.system'] === 'redis'),
    );
    const [server] = byName(spans, 'GET /plants', client.traceId);
    const redis = spans.filter(
      (span) => span.traceId === client.traceId && span.attributes['db.system'] === 'redis',
    );
    expect(redis.length).toBeGreaterThan(0);
    for (const span of redis) {
      expect(span).toMatchObject({
        parentSpanId: server!.spanId,
        kind: SpanKind.client,
        attributes: { 'db.system.name': 'redis', 'server.address': '127.0.0.1', 'server.port': 6379 },
      });
      expect(['EVALSHA', 'EVAL']).toContain(span.name);
      expect(Object.keys(span.attributes).sort()).toEqual([
        'db.operation.name',
        'db.system',
        'db.system.name',
        'server.address',
        'server.port',
      ]);
    }
  });
});

describe.skipIf(!postgresAvailable())(
  'traces across two instances on one PostgreSQL database (built service)',
  () => {
    const SECRETS_KEY = randomBytes(32).toString('base64');
    let store: TestStoreInstance;
    let collector: OtlpReceiver;
    let hooks: Receiver;
    let endpointHooks: Receiver;
    let endpointSecret = '';
    let a: ApiProcess;
    let b: ApiProcess;

    beforeAll(async () => {
      store = await postgresTestStore.setup();
      collector = await startOtlpReceiver();
      hooks = await startReceiver(WEBHOOK_SECRET);
      endpointHooks = await startReceiver(() => endpointSecret);
      const env = (service: string, pollMs: string) => ({
        ...store.env,
        OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
        OTEL_SERVICE_NAME: service,
        OTEL_BSP_SCHEDULE_DELAY: '50',
        WEBHOOK_URLS: hooks.url,
        WEBHOOK_SECRET,
        WEBHOOK_SECRETS_KEY: SECRETS_KEY,
        WEBHOOK_ALLOW_PRIVATE_URLS: '1',
        WEBHOOK_POLL_INTERVAL_MS: pollMs,
      });
      // A's worker looks once, at start-up, and then not for 10 minutes: B delivers what A enqueues.
      a = await startApiProcess({ env: env('plants-a', '600000') });
      b = await startApiProcess({ env: env('plants-b', '50') });
    });
    afterAll(async () => {
      await Promise.all([a?.stop(), b?.stop()]);
      a?.cleanup();
      b?.cleanup();
      await Promise.all([collector?.close(), hooks?.close(), endpointHooks?.close()]);
      await store?.teardown();
    });

    it("links B's attempts, operator subscriber and endpoint alike, to the create on A", async () => {
      const registered = await send(`${a.url}/webhook-endpoints`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ url: endpointHooks.url }),
      });
      expect(registered.status).toBe(201);
      endpointSecret = (registered.json as { secret: string }).secret;

      const client = clientContext();
      const created = await postPlant(a.url, '{"id":11,"name":"Fern"}', {
        ...JSON_HEADERS,
        traceparent: client.traceparent,
      });
      expect(created.status).toBe(200);
      await hooks.waitFor((received) => received.length === 1);
      await endpointHooks.waitFor((received) => received.length === 1);
      expect([hooks.received[0]!.verified, endpointHooks.received[0]!.verified]).toEqual([true, true]);

      const spans = await collector.waitFor(
        (all) =>
          byName(all, 'create', client.traceId).length === 1 &&
          byName(all, 'commit').some((span) => span.links.some((link) => link.traceId === client.traceId)) &&
          byName(all, 'POST').length === 2,
      );
      const [create] = byName(spans, 'create', client.traceId);
      expect(create).toMatchObject({ service: 'plants-a', attributes: { 'db.system': 'postgresql' } });
      const [commit] = byName(spans, 'commit').filter((span) =>
        span.links.some((link) => link.spanId === create!.spanId),
      );
      expect(commit).toMatchObject({ service: 'plants-a', parentSpanId: '' });
      expect(create!.links).toEqual([{ traceId: commit!.traceId, spanId: commit!.spanId }]);

      const attempts = byName(spans, 'POST');
      expect(attempts.map((span) => span.service)).toEqual(['plants-b', 'plants-b']);
      for (const attempt of attempts)
        expect(attempt).toMatchObject({
          parentSpanId: '',
          links: [{ traceId: client.traceId, spanId: create!.spanId }],
        });
      // Each receiver got the traceparent of B's attempt.
      expect([hooks.received[0]!.traceparent, endpointHooks.received[0]!.traceparent].sort()).toEqual(
        attempts.map((span) => `00-${span.traceId}-${span.spanId}-01`).sort(),
      );
      expect(
        attempts.find((span) => span.attributes['plant_store.webhook.endpoint_id'] !== undefined),
      ).toMatchObject({ attributes: { 'plant_store.webhook.event': 'plant.created' } });

      // Nothing secret in what either instance exported.
      for (const { raw } of collector.requests)
        for (const secret of [TOKEN, WEBHOOK_SECRET, endpointSecret, SECRETS_KEY])
          expect(raw.includes(Buffer.from(secret)), 'a secret was exported').toBe(false);
    });
  },
);
