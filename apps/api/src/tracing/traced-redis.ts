import {
  context,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import type { Middleware } from 'koa';
import type { Redis } from 'ioredis';

/**
 * `middleware` (a Redis rate limiter) run with the request's span (`ctx.state.span`, when recorded)
 * active, so the commands it sends are its children; what it calls next runs as it would without.
 */
export function withRequestSpan(middleware: Middleware): Middleware {
  return (ctx, next) => {
    const span: Span | undefined = ctx.state.span;
    if (span === undefined) return middleware(ctx, next);
    const outer = context.active();
    return context.with(trace.setSpan(outer, span), () => middleware(ctx, () => context.with(outer, next)));
  };
}

/**
 * A CLIENT span for each command `redis` sends while a traced request's span is active (the rate
 * limiters' EVALSHA: app.ts runs them with `withRequestSpan`), named by the command, with `db.system` `redis` and the server's address: never the
 * command's arguments (keys name tokens). Through `sendCommand`, ioredis's public entry for every
 * command (its own instrumentation wraps the same method; bundled, that instrumentation cannot
 * hook the module). Other commands (the ready check, EVAL loading the script after a NOSCRIPT)
 * make none.
 */
export function traceRedis(redis: Redis, tracer: Tracer): void {
  const send = redis.sendCommand.bind(redis);
  const { host, port } = redis.options;
  redis.sendCommand = (command, stream) => {
    const parent = trace.getActiveSpan();
    if (!parent?.isRecording()) return send(command, stream);
    const name = command.name.toUpperCase();
    const span = tracer.startSpan(
      name,
      {
        kind: SpanKind.CLIENT,
        attributes: {
          'db.system': 'redis',
          'db.system.name': 'redis',
          'db.operation.name': name,
          ...(host !== undefined && { 'server.address': host }),
          ...(port !== undefined && { 'server.port': port }),
        },
      },
      trace.setSpan(ROOT_CONTEXT, parent),
    );
    command.promise.then(
      () => span.end(),
      (error: unknown) => {
        span.setAttribute('error.type', error instanceof Error ? error.name : '_OTHER');
        span.setStatus({ code: SpanStatusCode.ERROR });
        span.end();
      },
    );
    return send(command, stream);
  };
}
