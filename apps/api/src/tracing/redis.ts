import { context, SpanKind, SpanStatusCode, type Tracer, trace } from '@opentelemetry/api';
import type { Redis } from 'ioredis';

/**
 * A CLIENT span for each command `redis` sends inside a traced request (the rate limiters'
 * EVALSHA, and EVAL when the script is not loaded yet), named by the command, with `db.system`
 * `redis` and the server's address: never the command's arguments (keys name tokens). Through
 * `sendCommand`, ioredis's public entry for every command (its own instrumentation wraps the same
 * method; bundled, that instrumentation cannot hook the module). Commands outside a request (the
 * ready check) make none.
 */
export function traceRedis(redis: Redis, tracer: Tracer): void {
  const send = redis.sendCommand.bind(redis);
  const { host, port } = redis.options;
  redis.sendCommand = (command, stream) => {
    const parent = context.active();
    if (!trace.getSpan(parent)?.isRecording()) return send(command, stream);
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
      parent,
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
