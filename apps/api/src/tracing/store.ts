import {
  type Attributes,
  context,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import type { PlantStore } from '../store/store.ts';

/** `db.system` as the semantic conventions name the stores. */
export type DbSystem = 'sqlite' | 'postgresql';

/** The store's parts whose calls are traced too, each call named `<part>.<method>`. */
const PARTS = ['events', 'deliveries', 'tokens', 'idempotencyKeys', 'webhookEndpoints'] as const;

/**
 * The store with a CLIENT span around each call made inside a traced request: named by the
 * operation (`create`, `get`, `idempotencyKeys.claim`, …) with `db.system` and `db.operation.name`,
 * and nothing of the call's arguments or results (ids, names, keys, payloads). Active while the
 * call runs, so the store can read it (`tracing/commit.ts`). A call outside a recording span (the
 * worker's polls, the hub's reads, token reloads) makes none: a span per poll would be noise. A
 * rejection sets the status to error with its class as `error.type`, never its message (a
 * PostgreSQL message can quote a value).
 */
export function traceStore(store: PlantStore, tracer: Tracer, system: DbSystem): PlantStore {
  const traced = { ...tracedMethods(store, '', tracer, system) };
  for (const part of PARTS)
    Object.assign(traced, { [part]: tracedMethods(store[part], `${part}.`, tracer, system) });
  return traced;
}

function tracedMethods<T extends object>(target: T, prefix: string, tracer: Tracer, system: DbSystem): T {
  const traced: Record<string, unknown> = {};
  for (const [name, member] of Object.entries(target)) {
    if (typeof member !== 'function') {
      traced[name] = member;
      continue;
    }
    const operation = prefix + name;
    const attributes: Attributes = {
      'db.system': system,
      'db.system.name': system,
      'db.operation.name': operation,
    };
    traced[name] = (...args: unknown[]) => {
      const parent = context.active();
      if (!trace.getSpan(parent)?.isRecording()) return member.apply(target, args);
      const span = tracer.startSpan(operation, { kind: SpanKind.CLIENT, attributes }, parent);
      let result: unknown;
      try {
        result = context.with(trace.setSpan(parent, span), () => member.apply(target, args));
      } catch (error) {
        fail(span, error);
        throw error;
      }
      if (!(result instanceof Promise)) {
        span.end();
        return result;
      }
      return result.then(
        (value) => {
          span.end();
          return value;
        },
        (error: unknown) => {
          fail(span, error);
          throw error;
        },
      );
    };
  }
  return traced as T;
}

function fail(span: Span, error: unknown): void {
  span.setAttribute('error.type', error instanceof Error ? error.name : '_OTHER');
  span.setStatus({ code: SpanStatusCode.ERROR });
  span.end();
}
