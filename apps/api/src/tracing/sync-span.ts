import type { Span } from '@opentelemetry/api';

/**
 * How a span reaches the code a call runs, without AsyncLocalStorage: on Node 20 its promise hooks
 * cost every request about an eighth of a read, traced or not (docs/tracing.md, "What it costs").
 * The span is current only while the call runs synchronously: code that reads it must do so
 * before its first `await` (the store's `create` as it queues its write, ioredis as it sends a
 * command). A test of each reader proves it still does.
 */
let current: Span | undefined;

/** Runs `run` with `span` current for what it calls synchronously. */
export function withSyncSpan<T>(span: Span | undefined, run: () => T): T {
  const previous = current;
  current = span;
  try {
    return run();
  } finally {
    current = previous;
  }
}

/** The span of the call running synchronously now, if any. */
export function syncSpan(): Span | undefined {
  return current;
}
