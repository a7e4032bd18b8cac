import { context, propagation } from '@opentelemetry/api';
import type { AnyRouter } from '@trpc/server';
import type { TRPCLink } from '@trpc/client';

/**
 * The W3C Trace Context headers (`traceparent`, `tracestate`) of the caller's active
 * OpenTelemetry context: the server's span then continues the caller's trace. Empty outside a
 * span, and without an OpenTelemetry SDK (the API alone propagates nothing).
 */
export function traceHeaders(): Record<string, string> {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier;
}

/**
 * A tRPC link that reads the caller's trace context when a call is made (a batch is sent later,
 * outside it) and puts its headers in the operation's context as `traceHeaders`, which the HTTP
 * links send.
 */
export function traceLink<TRouter extends AnyRouter>(): TRPCLink<TRouter> {
  return () =>
    ({ op, next }) => {
      const headers = traceHeaders();
      if (!('traceparent' in headers)) return next(op);
      return next({ ...op, context: { ...op.context, traceHeaders: headers } });
    };
}

/** The trace headers `traceLink` put in an operation's context. */
export function traceHeadersOf(op: { context: Record<string, unknown> } | undefined): Record<string, string> {
  return (op?.context.traceHeaders as Record<string, string> | undefined) ?? {};
}
