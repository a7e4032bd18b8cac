import { ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { DbSystem } from './traced-store.ts';
import { syncSpan } from './sync-span.ts';

/** The instrumentation scope of the store's own spans (the global tracer: stores are not given one). */
const STORE_TRACER = 'plant-store-api/store';

/*
 * What the stores call to trace their writes: these work on the global API, without a tracer, and
 * cost nothing when tracing is off (no store call is traced, so nothing is captured or started).
 */

/**
 * The span of the traced store call running now (`storeTracer` makes it current while the call
 * runs synchronously): what `create` keeps with its queued write, so the group commit that carries
 * the write can link to it (`startCommitSpan`). Read it before the call's first `await`.
 */
export function activeStoreSpan(): Span | undefined {
  const span = syncSpan();
  return span?.isRecording() ? span : undefined;
}

/**
 * The W3C `traceparent` of the traced store call running now, or `undefined` outside one: what a
 * create writes in each outbox row it enqueues (`trace_context`), so the delivery, attempted
 * minutes later or by another instance, links back to the request that caused it. Read it before
 * the call's first `await`.
 */
export function currentTraceparent(): string | undefined {
  const span = activeStoreSpan();
  if (span === undefined) return undefined;
  const { traceId, spanId, traceFlags } = span.spanContext();
  return `00-${traceId}-${spanId}-${`0${traceFlags.toString(16)}`.slice(-2)}`;
}

/** A group commit's span; `end` it once the commit is durable (or failed, with the error). */
export type CommitSpan = { end(error?: unknown): void };

const NOT_TRACED: CommitSpan = { end() {} };

/**
 * Starts the span of one group commit (`commit`, a CLIENT span of `system`) carrying the writes
 * of these store calls (`activeStoreSpan()` of each; `undefined` for an untraced one). It is a root
 * span (a commit serves many requests) linked to each traced call's span, and each of those gets
 * a link back to it: from a slow create one finds the commit it waited for, and what else it
 * carried. None when no carried call is traced.
 */
export function startCommitSpan(system: DbSystem, carried: readonly (Span | undefined)[]): CommitSpan {
  const traced = carried.filter((span): span is Span => span !== undefined);
  if (traced.length === 0) return NOT_TRACED;
  const span = trace.getTracer(STORE_TRACER).startSpan(
    'commit',
    {
      kind: SpanKind.CLIENT,
      attributes: {
        'db.system': system,
        'db.system.name': system,
        'db.operation.name': 'commit',
        'db.operation.batch.size': carried.length,
      },
      links: traced.map((call) => ({ context: call.spanContext() })),
    },
    ROOT_CONTEXT,
  );
  const link = { context: span.spanContext() };
  for (const call of traced) call.addLink(link);
  return {
    end(error) {
      if (error !== undefined) {
        span.setAttribute('error.type', error instanceof Error ? error.name : '_OTHER');
        span.setStatus({ code: SpanStatusCode.ERROR });
      }
      span.end();
    },
  };
}

/**
 * What a group commit (store/group-commit.ts) keeps of the traced calls whose writes it queues, to
 * start each batch's span with: nothing, and no span, while no queued write is traced.
 */
export function commitTracing<T extends object>(system: DbSystem) {
  const carried = new Map<T, Span>();
  return {
    /** Keeps the span of the traced store call queueing `item` now, if any. */
    queued(item: T): void {
      const span = activeStoreSpan();
      if (span) carried.set(item, span);
    },
    /** The span of committing `batch` (`startCommitSpan`), its items' spans forgotten. */
    start(batch: readonly T[]): CommitSpan {
      if (carried.size === 0) return NOT_TRACED;
      const span = startCommitSpan(
        system,
        batch.map((item) => carried.get(item)),
      );
      for (const item of batch) carried.delete(item);
      return span;
    },
    /** Forgets every item's span (the queue was dropped). */
    clear: () => carried.clear(),
  };
}
