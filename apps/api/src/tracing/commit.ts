import { ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode, type Tracer, trace } from '@opentelemetry/api';
import type { CommitObserver, DbSystem } from '../store/contract.ts';

/*
 * The spans of the store's group commits, made here and handed to the store when it opens
 * (`StoreHooks.commits`): the store only tells its observer what it queues and commits.
 */

/**
 * The span of the traced store call running now, if it records: tracing/traced-store.ts makes it
 * the active span (OpenTelemetry's context, kept across awaits by the context manager sdk.ts
 * registers) for the whole call.
 */
export function activeStoreSpan(): Span | undefined {
  const span = trace.getActiveSpan();
  return span?.isRecording() ? span : undefined;
}

/** A span's W3C `traceparent`, as an outbox row keeps it (`trace_context`) for the attempt to link to. */
export function traceparentOf(span: Span): string {
  const { traceId, spanId, traceFlags } = span.spanContext();
  return `00-${traceId}-${spanId}-${`0${traceFlags.toString(16)}`.slice(-2)}`;
}

/** A group commit's span; `end` it once the commit is durable (or failed, with the error). */
export type CommitSpan = { end(error?: unknown): void };

const NOT_TRACED: CommitSpan = { end() {} };

/**
 * Starts the span of one group commit (`commit`, a CLIENT span of `system`) carrying the writes
 * of these store calls (the span of each; `undefined` for an untraced one). It is a root span (a
 * commit serves many requests) linked to each traced call's span, and each of those gets a link
 * back to it: from a slow create one finds the commit it waited for, and what else it carried.
 * None when no carried call is traced.
 */
export function startCommitSpan(
  tracer: Tracer,
  system: DbSystem,
  carried: readonly (Span | undefined)[],
): CommitSpan {
  const traced = carried.filter((span): span is Span => span !== undefined);
  if (traced.length === 0) return NOT_TRACED;
  const span = tracer.startSpan(
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
 * What the store is handed to watch its group commits with: it keeps the span of the traced call
 * queueing each write, and a batch carrying any gets its commit span (`startCommitSpan`).
 */
export function commitSpans(tracer: Tracer): CommitObserver<Span> {
  return {
    queued: activeStoreSpan,
    committing: (system, carried) => startCommitSpan(tracer, system, carried),
  };
}
