import {
  type Attributes,
  context,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import type { Middleware } from 'koa';

/** Methods named as they are; any other is `_OTHER`, as the HTTP semantic conventions say. */
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/**
 * Outermost middleware when tracing is on: one SERVER span per request, continuing the client's
 * `traceparent` (W3C Trace Context), active while the request is served, so the access log line,
 * store calls and Redis commands below are inside it. Named `{method} {route}` by the route
 * template or tRPC procedure that served it (`ctx.state.route`, as metrics and logs name it),
 * never by the raw path. Its attributes are the semantic conventions' (HTTP server spans, v1.26+):
 * method, route, path, scheme, status; never the query, headers or body. A 5xx sets the status to
 * error (a 4xx is the client's: unset, as the conventions say).
 */
export function traceMiddleware(tracer: Tracer): Middleware {
  return (ctx, next) => {
    const parent = propagation.extract(ROOT_CONTEXT, ctx.req.headers);
    const method = METHODS.has(ctx.method) ? ctx.method : '_OTHER';
    const attributes: Attributes = {
      'http.request.method': method,
      'url.scheme': ctx.protocol,
      'url.path': ctx.path,
      'network.protocol.version': ctx.req.httpVersion,
    };
    if (method === '_OTHER') attributes['http.request.method_original'] = ctx.method;
    const span = tracer.startSpan(
      method === '_OTHER' ? 'HTTP' : method,
      { kind: SpanKind.SERVER, attributes },
      parent,
    );
    return context.with(trace.setSpan(parent, span), async () => {
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
    });
  };
}
