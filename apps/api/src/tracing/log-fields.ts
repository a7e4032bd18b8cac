import { isSpanContextValid, trace } from '@opentelemetry/api';

/**
 * The active span's ids for a log line (pino's `mixin`): `trace_id`, `span_id` and `trace_flags`,
 * as OpenTelemetry's log data model names them, so a collector joins lines and spans. Nothing
 * outside a span. A new object each call: pino merges the line's fields into it.
 */
export function traceLogFields(): object {
  const span = trace.getActiveSpan();
  if (span === undefined) return {};
  const { traceId, spanId, traceFlags } = span.spanContext();
  if (!isSpanContextValid({ traceId, spanId, traceFlags })) return {};
  return { trace_id: traceId, span_id: spanId, trace_flags: `0${traceFlags.toString(16)}`.slice(-2) };
}
