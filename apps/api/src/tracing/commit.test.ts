import { context, ROOT_CONTEXT, type Span, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../config/config.ts';
import { groupCommit } from '../store/group-commit.ts';
import type { Delivery } from '../store/contract.ts';
import { activeStoreSpan, startCommitSpan, traceparentOf } from './commit.ts';
import { startAttemptSpan } from './delivery.ts';
import { startTracing } from './sdk.ts';

// The SDK as main.ts starts it, its spans kept in memory.
const exporter = new InMemorySpanExporter();
const config = loadConfig({
  OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:1',
  OTEL_BSP_SCHEDULE_DELAY: '1',
});
const tracing = startTracing(config.tracing!, { exporter });
const { tracer } = tracing;
afterAll(() => tracing.shutdown());

/** The spans ended so far, once the batch processor has handed them over. */
async function finished(): Promise<ReadableSpan[]> {
  await new Promise((resolve) => setTimeout(resolve, 20));
  return exporter.getFinishedSpans();
}

/** Runs `run` with `span` active, as tracing/traced-store.ts runs a store call. */
const inSpan = <T>(span: Span, run: () => T): T => context.with(trace.setSpan(ROOT_CONTEXT, span), run);

/** Runs `work` as a traced store call runs: its span active while it runs. */
function inStoreCall<T>(name: string, work: (span: Span) => T): T {
  const span = tracer.startSpan(name);
  return inSpan(span, () => work(span));
}

beforeEach(() => exporter.reset());

describe("the store's commit observer and the outbox's trace context", () => {
  it('capture nothing outside a recording span, and make no commit span for untraced writes', async () => {
    expect(activeStoreSpan()).toBeUndefined();
    expect(tracing.commits.queued()).toBeUndefined();
    startCommitSpan(tracer, 'sqlite', [undefined, undefined]).end();
    expect(await finished()).toEqual([]);
  });

  it('link a commit to each create it carried, and each create back to it', async () => {
    const carried = [
      inStoreCall('create', () => activeStoreSpan()),
      undefined,
      inStoreCall('create', () => activeStoreSpan()),
    ];
    const commit = startCommitSpan(tracer, 'postgresql', carried);
    commit.end();
    for (const span of carried) span?.end();
    const spans = await finished();
    const commitSpan = spans.find((span) => span.name === 'commit')!;
    expect(commitSpan.parentSpanContext).toBeUndefined();
    expect(commitSpan.attributes).toEqual({
      'db.system': 'postgresql',
      'db.system.name': 'postgresql',
      'db.operation.name': 'commit',
      'db.operation.batch.size': 3,
    });
    const creates = spans.filter((span) => span.name === 'create');
    expect(commitSpan.links.map((link) => link.context.spanId)).toEqual(
      creates.map((span) => span.spanContext().spanId),
    );
    for (const create of creates) {
      expect(create.links.map((link) => link.context.spanId)).toEqual([commitSpan.spanContext().spanId]);
    }
  });

  it('mark a failed commit as an error, by its class', async () => {
    const carried = [inStoreCall('create', () => activeStoreSpan())];
    startCommitSpan(tracer, 'sqlite', carried).end(new RangeError('disk full at /var/lib/secret'));
    const [commit] = (await finished()).filter((span) => span.name === 'commit');
    expect(commit!.status).toEqual({ code: 2 });
    expect(commit!.attributes['error.type']).toBe('RangeError');
  });

  it('give the outbox row the traceparent of the create, which the attempt then links to', async () => {
    const traceparent = inStoreCall('create', (span) => {
      const value = traceparentOf(span);
      span.end();
      return value;
    });
    const [create] = await finished();
    const { traceId, spanId } = create!.spanContext();
    expect(traceparent).toBe(`00-${traceId}-${spanId}-01`);

    exporter.reset();
    const delivery: Delivery & { traceContext: string } = {
      id: 'msg_1',
      url: 'https://hooks.example.com:8443/T0SECRET/path?token=x',
      payload: '{}',
      attempts: 2,
      createdAt: new Date(),
      traceContext: traceparent!,
    };
    const attempt = startAttemptSpan(tracer, delivery);
    attempt.end({ ok: true, status: 204 });
    const [span] = await finished();
    expect(span!.links.map((link) => link.context)).toMatchObject([{ traceId, spanId }]);
    expect(span!.parentSpanContext).toBeUndefined();
    expect(attempt.headers.traceparent).toBe(
      `00-${span!.spanContext().traceId}-${span!.spanContext().spanId}-01`,
    );
    expect(span!.attributes).toEqual({
      'http.request.method': 'POST',
      'server.address': 'hooks.example.com',
      'server.port': 8443,
      'url.scheme': 'https',
      'plant_store.webhook.id': 'msg_1',
      'plant_store.webhook.attempt': 2,
      'http.request.resend_count': 1,
      'http.response.status_code': 204,
    });
  });

  it('start an attempt without a link when its row has no trace context', async () => {
    const attempt = startAttemptSpan(tracer, {
      id: 'msg_2',
      url: 'http://127.0.0.1:9/',
      payload: '{}',
      attempts: 1,
      createdAt: new Date(),
    });
    attempt.end({ ok: false, abandoned: false, error: 'connection failed (ECONNREFUSED)' });
    const [span] = await finished();
    expect(span!.links).toEqual([]);
    expect(span!.status).toEqual({ code: 2, message: 'connection failed (ECONNREFUSED)' });
    expect(span!.attributes['error.type']).toBe('_OTHER');
  });
});

/** A group commit whose batches wait for `settle`, and the batches it was handed. */
function gated() {
  const batches: object[][] = [];
  let settle: (error?: Error) => void = () => {};
  const writes = groupCommit<object>(
    (batch) => {
      batches.push(batch);
      return new Promise<void>((resolve, reject) => {
        settle = (error) => (error ? reject(error) : resolve());
      });
    },
    { system: 'sqlite', observer: tracing.commits },
  );
  return { writes, batches, settle: (error?: Error) => settle(error) };
}

describe('the group commit (store/group-commit.ts), traced', () => {
  it('ends the commit span of a batch with a traced write only once the commit is done', async () => {
    const { writes, batches, settle } = gated();
    const call = tracer.startSpan('create');
    inSpan(call, () => writes.push({}));
    writes.push({});
    while (batches.length === 0) await new Promise((resolve) => setImmediate(resolve));
    expect(batches[0]).toHaveLength(2);
    expect(await finished()).toStrictEqual([]);
    settle();
    await writes.drained();
    const [commit] = await finished();
    expect(commit).toMatchObject({ name: 'commit', status: { code: 0 } });
    expect(commit!.attributes['db.operation.batch.size']).toBe(2);
  });

  it("links a write queued after the call's awaits to the call: its span stays active across them", async () => {
    const { writes, batches, settle } = gated();
    const call = tracer.startSpan('create');
    await inSpan(call, async () => {
      await new Promise((resolve) => setTimeout(resolve, 1));
      writes.push({});
    });
    while (batches.length === 0) await new Promise((resolve) => setImmediate(resolve));
    settle();
    await writes.drained();
    call.end();
    const spans = await finished();
    const commit = spans.find((span) => span.name === 'commit')!;
    expect(commit.links.map((link) => link.context.spanId)).toStrictEqual([call.spanContext().spanId]);
  });

  it('marks the commit span of a failed batch as an error, by its class', async () => {
    const { writes, batches, settle } = gated();
    inSpan(tracer.startSpan('create'), () => writes.push({}));
    while (batches.length === 0) await new Promise((resolve) => setImmediate(resolve));
    settle(new RangeError('disk full'));
    await writes.drained();
    const [commit] = await finished();
    expect(commit).toMatchObject({
      name: 'commit',
      status: { code: 2 },
      attributes: { 'error.type': 'RangeError' },
    });
  });

  it('starts no span for a batch of untraced writes, nor for writes under a span that is not recording', async () => {
    const { writes, batches, settle } = gated();
    writes.push({});
    // A request that is not sampled: its spans do not record.
    const unsampled = trace.wrapSpanContext({
      traceId: '1'.repeat(32),
      spanId: '2'.repeat(16),
      traceFlags: 0,
    });
    inSpan(unsampled, () => writes.push({}));
    while (batches.length === 0) await new Promise((resolve) => setImmediate(resolve));
    settle();
    await writes.drained();
    expect((await finished()).filter((span) => span.name === 'commit')).toStrictEqual([]);
  });
});
