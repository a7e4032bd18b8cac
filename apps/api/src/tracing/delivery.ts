import {
  type Attributes,
  type Link,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import type { Delivery } from '../store/contract.ts';
import type { AttemptOutcome } from '../webhooks/send.ts';

/** One attempt's span: the headers that carry it to the receiver, and its end. */
export type AttemptSpan = { headers: Record<string, string>; end(outcome: AttemptOutcome): void };

/**
 * The CLIENT span of one webhook attempt, `POST`, as the HTTP client conventions name a request
 * without a URL template. A root span of its own (an attempt can come minutes after the request,
 * from another instance), linked to the request that enqueued the delivery when its outbox row
 * says which (`traceContext`). Its `traceparent` goes to the receiver with the attempt. Attributes
 * name the receiver by host and port only: a URL's path and query can hold a secret (Slack's do),
 * so `url.full` is left out; the body is never recorded.
 */
export function startAttemptSpan(tracer: Tracer, delivery: Delivery): AttemptSpan {
  const url = new URL(delivery.url);
  const attributes: Attributes = {
    'http.request.method': 'POST',
    'server.address': url.hostname,
    'server.port': Number(url.port) || (url.protocol === 'https:' ? 443 : 80),
    'url.scheme': url.protocol.slice(0, -1),
    'plant_store.webhook.id': delivery.id,
    'plant_store.webhook.attempt': delivery.attempts,
  };
  if (delivery.attempts > 1) attributes['http.request.resend_count'] = delivery.attempts - 1;
  if (delivery.endpoint) {
    attributes['plant_store.webhook.endpoint_id'] = delivery.endpoint.id;
    attributes['plant_store.webhook.event'] = delivery.endpoint.event;
  }
  const links = linkTo(delivery.traceContext);
  const span = tracer.startSpan('POST', { kind: SpanKind.CLIENT, attributes, links }, ROOT_CONTEXT);
  const headers: Record<string, string> = {};
  propagation.inject(trace.setSpan(ROOT_CONTEXT, span), headers);
  return {
    headers,
    end(outcome) {
      const status = outcome.ok || outcome.status !== undefined ? outcome.status : undefined;
      if (status !== undefined) span.setAttribute('http.response.status_code', status);
      if (!outcome.ok) {
        span.setAttribute('error.type', outcome.abandoned ? 'abandoned' : String(status ?? '_OTHER'));
        // Redacted like the log and `last_error` (send.ts): e.g. "connection failed (ECONNREFUSED)".
        span.setStatus({ code: SpanStatusCode.ERROR, message: outcome.error });
      }
      span.end();
    },
  };
}

/** The link to the enqueueing request, from the outbox row's `traceparent`; none without one. */
function linkTo(traceparent: string | undefined): Link[] {
  if (!traceparent) return [];
  const found = trace.getSpanContext(propagation.extract(ROOT_CONTEXT, { traceparent }));
  return found ? [{ context: found }] : [];
}
