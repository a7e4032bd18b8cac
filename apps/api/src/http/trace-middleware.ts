import {
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import type { Context, Middleware, Next } from 'koa';
import type { Logger } from 'pino';
import { traceLogFields } from '../tracing/log-fields.ts';

/** Methods named as they are; any other is `_OTHER`, as the HTTP semantic conventions say. */
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** The options of every server span: made once, not per request. */
const SERVER = { kind: SpanKind.SERVER };

/**
 * Outermost middleware when tracing is on: one SERVER span per request, continuing the client's
 * `traceparent` (W3C Trace Context). Named `{method} {route}` by the route template or tRPC
 * procedure that served it (`ctx.state.route`, as metrics and logs name it), never by the raw
 * path. Its attributes are the semantic conventions' (HTTP server spans): method, route, path,
 * scheme, status; never the query, headers or body. A 5xx sets the status to error (a 4xx is the
 * client's: unset, as the conventions say).
 *
 * The span is handed down explicitly: `ctx.state.span` when it is recorded (the store's view,
 * tracing/traced-store.ts, and the Redis limiters, tracing/traced-redis.ts, make it their
 * spans' parent; each makes its own span active while it runs), and
 * `ctx.state.log`, a logger whose lines carry its ids, when it is recorded or continues a caller's
 * trace (the request's log lines then join that trace, sampled or not).
 */
export function traceMiddleware(tracer: Tracer, log: Logger): Middleware {
  return (ctx, next) => {
    // W3C Trace Context (the one propagator tracing/sdk.ts sets) continues nothing without a
    // `traceparent`: a request without one skips the propagator and its header getter.
    const headers = ctx.req.headers;
    const parent =
      headers.traceparent === undefined ? ROOT_CONTEXT : propagation.extract(ROOT_CONTEXT, headers);
    const method = METHODS.has(ctx.method) ? ctx.method : '_OTHER';
    const span = tracer.startSpan(method === '_OTHER' ? 'HTTP' : method, SERVER, parent);
    if (span.isRecording()) {
      ctx.state.log = log.child(traceLogFields(span.spanContext()));
      return traced(ctx, next, span, method);
    }
    // An unsampled request costs no more than this (no sampler here reads attributes), not even
    // an async function's promise; its log lines still join a caller's trace.
    if (parent !== ROOT_CONTEXT && trace.getSpanContext(parent) !== undefined) {
      ctx.state.log = log.child(traceLogFields(span.spanContext()));
    }
    return next();
  };
}

/** The rest of a recorded request: its attributes, then its route, status and end once answered. */
async function traced(ctx: Context, next: Next, span: Span, method: string): Promise<void> {
  span.setAttributes({
    'http.request.method': method,
    'url.scheme': ctx.protocol,
    'url.path': ctx.path,
    'network.protocol.version': ctx.req.httpVersion,
  });
  if (method === '_OTHER') span.setAttribute('http.request.method_original', ctx.method);
  ctx.state.span = span;
  let failed = false;
  try {
    await next();
  } catch (error) {
    failed = true;
    throw error;
  } finally {
    const route: unknown = ctx.state.route;
    if (typeof route === 'string') {
      span.setAttribute('http.route', route);
      if (method !== '_OTHER') span.updateName(`${method} ${route}`);
    }
    const status = ctx.respond === false ? ctx.res.statusCode : ctx.status;
    span.setAttribute('http.response.status_code', status);
    if (status >= 500 || failed) {
      span.setAttribute('error.type', failed ? '_OTHER' : String(status));
      span.setStatus({ code: SpanStatusCode.ERROR });
    }
    span.end();
  }
}
