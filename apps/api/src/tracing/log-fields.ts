import type { SpanContext } from '@opentelemetry/api';

/**
 * A span's ids as log fields, `trace_id`, `span_id` and `trace_flags`, as OpenTelemetry's log data
 * model names them, so a collector joins log lines and spans.
 */
export function traceLogFields({ traceId, spanId, traceFlags }: SpanContext) {
  return { trace_id: traceId, span_id: spanId, trace_flags: `0${traceFlags.toString(16)}`.slice(-2) };
}
