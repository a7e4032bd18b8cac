import { trace } from '@opentelemetry/api';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../config.ts';
import { startTracing } from '../tracing/sdk.ts';
import { withSyncSpan } from '../tracing/sync-span.ts';
import { groupCommit } from './group-commit.ts';

// The SDK as main.ts starts it, its spans kept in memory.
const exporter = new InMemorySpanExporter();
const tracing = startTracing(
  loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:1', OTEL_BSP_SCHEDULE_DELAY: '1' }).tracing!,
  exporter,
);
afterAll(() => tracing.shutdown());
beforeEach(() => exporter.reset());

async function finished(): Promise<ReadableSpan[]> {
  await new Promise((resolve) => setTimeout(resolve, 20));
  return exporter.getFinishedSpans();
}

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
    { system: 'sqlite' },
  );
  return { writes, batches, settle: (error?: Error) => settle(error) };
}

describe('groupCommit', () => {
  it('ends the commit span of a batch with a traced write only once the commit is done', async () => {
    const { writes, batches, settle } = gated();
    const call = tracing.tracer.startSpan('create');
    withSyncSpan(call, () => writes.push({}));
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

  it('marks the commit span of a failed batch as an error, by its class', async () => {
    const { writes, batches, settle } = gated();
    withSyncSpan(tracing.tracer.startSpan('create'), () => writes.push({}));
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
    withSyncSpan(unsampled, () => writes.push({}));
    while (batches.length === 0) await new Promise((resolve) => setImmediate(resolve));
    settle();
    await writes.drained();
    expect((await finished()).filter((span) => span.name === 'commit')).toStrictEqual([]);
  });
});
