/**
 * The links only the store can make (docs/tracing.md, "Links through the store"), on both stores as
 * the api opens them, with the SDK as main.ts starts it and its spans kept in memory: each traced
 * create links to the group commit that carried it and back, and each delivery a traced call
 * enqueued hands its `traceparent` to the worker's claim.
 */
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.ts';
import { openStore } from '../../src/store/open-store.ts';
import type { Delivery, PlantStore } from '../../src/store/contract.ts';
import { startTracing } from '../../src/tracing/sdk.ts';
import { storeTracer } from '../../src/tracing/traced-store.ts';
import { TOKEN } from '../support/http.ts';
import { type TestStoreInstance, testStores } from '../support/stores.ts';

const exporter = new InMemorySpanExporter();
const tracing = startTracing(
  loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:1', OTEL_BSP_SCHEDULE_DELAY: '1' }).tracing!,
  { exporter },
);
afterAll(() => tracing.shutdown());

/** The spans ended so far, once the batch processor has handed them over. */
async function finished(): Promise<ReadableSpan[]> {
  await new Promise((resolve) => setTimeout(resolve, 20));
  return exporter.getFinishedSpans();
}

const named = (spans: ReadableSpan[], name: string) => spans.filter((span) => span.name === name);
const spanIds = (links: ReadableSpan['links']) => links.map((link) => link.context.spanId);
const traceparent = (span: ReadableSpan) =>
  `00-${span.spanContext().traceId}-${span.spanContext().spanId}-01`;

const HOOK = 'http://127.0.0.1:9/hook';
const ENDPOINT = {
  id: `we_${'1'.padStart(24, '0')}`,
  owner: 'alice',
  url: 'http://127.0.0.1:9/endpoint',
  description: null,
  secret: 'sealed',
};
const claimHook = (store: PlantStore) => store.deliveries.claim({ url: HOOK, limit: 10, leaseMs: 60_000 });
const claimEndpoint = (store: PlantStore) =>
  store.deliveries.claim({ endpointId: ENDPOINT.id, limit: 10, leaseMs: 60_000 });

describe.each(testStores())('trace links through the $name store', (testStore) => {
  const system = testStore.name === 'postgres' ? 'postgresql' : 'sqlite';
  let instance: TestStoreInstance;
  let store: PlantStore;
  /** The store as one traced request sees it (its own request span each call). */
  let traced: () => PlantStore;

  beforeEach(async () => {
    instance = await testStore.setup();
    // As main.ts opens it with tracing on: its group commits watched by the tracing.
    store = await openStore(loadConfig({ ...instance.env, API_TOKENS: TOKEN }).store, {
      commits: tracing.commits,
    });
    const view = storeTracer(store, tracing.tracer, system);
    traced = () => view(tracing.tracer.startSpan('request'));
    exporter.reset();
  });
  afterEach(async () => {
    await store.close();
    await instance.teardown();
  });

  it('links concurrent creates to the one commit that carried them, and that commit back to each traced one', async () => {
    const created = await Promise.all([
      traced().create({ id: 1n, name: 'Fern' }),
      store.create({ id: 2n, name: 'Moss' }),
      traced().create({ id: 3n, name: 'Ivy' }),
      traced().create({ id: 4n, name: 'Sage' }),
    ]);
    // Each committed: its version, the id of its event (one per create).
    expect(new Set(created).size).toBe(4);
    for (const version of created) expect(version).toBeTypeOf('bigint');
    const spans = await finished();
    const [commit, ...others] = named(spans, 'commit');
    expect(others).toStrictEqual([]);
    expect(commit!.parentSpanContext).toBeUndefined();
    expect(commit!.kind).toBe(2); // CLIENT
    expect(commit!.status).toStrictEqual({ code: 0 });
    expect(commit!.attributes).toStrictEqual({
      'db.system': system,
      'db.system.name': system,
      'db.operation.name': 'commit',
      'db.operation.batch.size': 4,
    });
    const creates = named(spans, 'create');
    expect(creates).toHaveLength(3);
    expect(new Set(spanIds(commit!.links))).toStrictEqual(
      new Set(creates.map((span) => span.spanContext().spanId)),
    );
    for (const create of creates) expect(spanIds(create.links)).toStrictEqual([commit!.spanContext().spanId]);
  });

  it('starts no commit span, and keeps no trace context, when no create is traced', async () => {
    await store.webhookEndpoints.create(ENDPOINT, { maxPerOwner: 3 });
    const outbox = [{ id: `msg_${'a'.repeat(32)}`, url: HOOK, payload: '{}' }];
    expect(
      await Promise.all([
        store.create({ id: 1n, name: 'Fern' }, { outbox: { deliveries: outbox, endpointPayload: '{}' } }),
      ]),
    ).toStrictEqual([1n]);
    expect(await finished()).toStrictEqual([]);
    const [hook] = await claimHook(store);
    const [fanned] = await claimEndpoint(store);
    expect(hook).not.toHaveProperty('traceContext');
    expect(fanned).not.toHaveProperty('traceContext');
    expect(await instance.rows('SELECT trace_context FROM webhook_deliveries')).toStrictEqual([
      { trace_context: null },
      { trace_context: null },
    ]);
  });

  it("gives each delivery a create enqueues, operator and endpoint alike, the create span's traceparent", async () => {
    await store.webhookEndpoints.create(ENDPOINT, { maxPerOwner: 3 });
    const outbox = (n: number) => [{ id: `msg_${String(n).repeat(32)}`, url: HOOK, payload: `{"id":${n}}` }];
    // One batch: a traced create between two untraced ones.
    const versions = await Promise.all([
      store.create(
        { id: 1n, name: 'Fern' },
        { outbox: { deliveries: outbox(1), endpointPayload: '{"id":1}' } },
      ),
      traced().create(
        { id: 2n, name: 'Moss' },
        { outbox: { deliveries: outbox(2), endpointPayload: '{"id":2}' } },
      ),
      store.create(
        { id: 3n, name: 'Ivy' },
        { outbox: { deliveries: outbox(3), endpointPayload: '{"id":3}' } },
      ),
    ]);
    expect(new Set(versions).size).toBe(3);
    for (const version of versions) expect(version).toBeTypeOf('bigint');
    const [create] = named(await finished(), 'create');
    const byPayload = (claimed: Delivery[]) =>
      Object.fromEntries(claimed.map((delivery) => [delivery.payload, delivery.traceContext ?? null]));
    const expected = { '{"id":1}': null, '{"id":2}': traceparent(create!), '{"id":3}': null };
    expect(byPayload(await claimHook(store))).toStrictEqual(expected);
    expect(byPayload(await claimEndpoint(store))).toStrictEqual(expected);
  });

  it('gives what an update and a delete fan out the traceparent of their own span', async () => {
    const events: ('plant.updated' | 'plant.deleted')[] = ['plant.updated', 'plant.deleted'];
    await store.webhookEndpoints.create({ ...ENDPOINT, events }, { maxPerOwner: 3 });
    await store.create({ id: 1n, name: 'Fern' });
    await traced().update({ id: 1n, name: 'Moss' });
    await traced().delete(1n);
    const spans = await finished();
    const [update] = named(spans, 'update');
    const [deleted] = named(spans, 'delete');
    const claimed = await claimEndpoint(store);
    expect(
      Object.fromEntries(claimed.map((delivery) => [delivery.endpoint!.event, delivery.traceContext])),
    ).toStrictEqual({
      'plant.updated': traceparent(update!),
      'plant.deleted': traceparent(deleted!),
    });
  });

  it('gives a ping and a redelivery their own traceparent; an untraced redelivery keeps the last', async () => {
    await store.webhookEndpoints.create(ENDPOINT, { maxPerOwner: 3 });
    const ping = { id: `msg_${'c'.repeat(32)}`, endpointId: ENDPOINT.id, url: ENDPOINT.url, payload: '{}' };
    await traced().deliveries.enqueue({ ...ping, event: 'webhook.ping' }, { maxPending: 10 });
    const [enqueue] = named(await finished(), 'deliveries.enqueue');
    expect(await claimEndpoint(store)).toMatchObject([{ id: ping.id, traceContext: traceparent(enqueue!) }]);
    await store.deliveries.markFailed(ping.id, 'HTTP 410', 410);

    exporter.reset();
    const again = { id: ping.id, endpointId: ENDPOINT.id, maxPending: 10 };
    await traced().deliveries.redeliver(again);
    const [redeliver] = named(await finished(), 'deliveries.redeliver');
    expect(await claimEndpoint(store)).toMatchObject([
      { id: ping.id, traceContext: traceparent(redeliver!) },
    ]);
    await store.deliveries.markFailed(ping.id, 'HTTP 410', 410);

    await store.deliveries.redeliver(again);
    expect(await claimEndpoint(store)).toMatchObject([
      { id: ping.id, traceContext: traceparent(redeliver!) },
    ]);
  });
});
