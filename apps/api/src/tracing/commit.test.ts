import type { Span } from '@opentelemetry/api';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../config.ts';
import type { Delivery } from '../store/store.ts';
import { activeStoreSpan, currentTraceparent, startCommitSpan } from './commit.ts';
import { startAttemptSpan } from './delivery.ts';
import { startTracing } from './sdk.ts';
import { withSyncSpan } from './sync-span.ts';

// The SDK as main.ts starts it, its spans kept in memory.
const exporter = new InMemorySpanExporter();
const config = loadConfig({
  OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:1',
  OTEL_BSP_SCHEDULE_DELAY: '1',
});
const tracing = startTracing(config.tracing!, exporter);
const { tracer } = tracing;
afterAll(() => tracing.shutdown());

/** The spans ended so far, once the batch processor has handed them over. */
async function finished(): Promise<ReadableSpan[]> {
  await new Promise((resolve) => setTimeout(resolve, 20));
  return exporter.getFinishedSpans();
}

/** Runs `work` as a traced store call runs (tracing/store.ts): its span current while it runs synchronously. */
function inStoreCall<T>(name: string, work: (span: Span) => T): T {
  const span = tracer.startSpan(name);
  return withSyncSpan(span, () => work(span));
}

beforeEach(() => exporter.reset());

describe('the store hooks (what the group commit and the outbox call)', () => {
  it('capture nothing outside a recording span, and make no commit span for untraced writes', async () => {
    expect(activeStoreSpan()).toBeUndefined();
    expect(currentTraceparent()).toBeUndefined();
    startCommitSpan('sqlite', [undefined, undefined]).end();
    expect(await finished()).toEqual([]);
  });

  it('link a commit to each create it carried, and each create back to it', async () => {
    const carried = [
      inStoreCall('create', () => activeStoreSpan()),
      undefined,
      inStoreCall('create', () => activeStoreSpan()),
    ];
    const commit = startCommitSpan('postgresql', carried);
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
    startCommitSpan('sqlite', carried).end(new RangeError('disk full at /var/lib/secret'));
    const [commit] = (await finished()).filter((span) => span.name === 'commit');
    expect(commit!.status).toEqual({ code: 2 });
    expect(commit!.attributes['error.type']).toBe('RangeError');
  });

  it('give the outbox row the traceparent of the create, which the attempt then links to', async () => {
    const traceparent = inStoreCall('create', (span) => {
      const value = currentTraceparent();
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
