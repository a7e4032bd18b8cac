import {
  type Attributes,
  context,
  ROOT_CONTEXT as ROOT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import type { DbSystem, PlantStore } from '../store/contract.ts';
import { traceparentOf } from './commit.ts';

/** The store's parts whose calls are traced too, each call named `<part>.<method>`. */
const PARTS = ['events', 'deliveries', 'tokens', 'idempotencyKeys', 'webhookEndpoints'] as const;

const PARENT = Symbol('parent span');

type Part = (typeof PARTS)[number];
/** A traced call's name: `create`, `deliveries.enqueue`, … */
type Operation = keyof PlantStore | { [P in Part]: `${P}.${keyof PlantStore[P] & string}` }[Part];

/**
 * The calls whose writes record the trace that made them (a delivery's `traceContext`), by the
 * index of their options argument (`ChangeOptions` and the like): each is handed its span's
 * `traceparent` there. A new call that enqueues deliveries belongs here.
 */
const RECORDS_TRACE: Partial<Record<Operation, number>> = {
  create: 1,
  update: 1,
  delete: 1,
  'deliveries.enqueue': 1,
  'deliveries.redeliver': 0,
};

/** Gives each traced request its view of the store; the store itself for any other. */
export type StoreTracer = (parent: Span | undefined) => PlantStore;

/**
 * The store as one traced request sees it: a CLIENT span, child of the request's, around each call,
 * named by the operation (`create`, `get`, `idempotencyKeys.claim`, …) with `db.system` and
 * `db.operation.name`, and nothing of the call's arguments or results (ids, names, keys,
 * payloads). The span is the active one while the call runs (OpenTelemetry's context: what the
 * store's commit observer reads to link its group commit, tracing/commit.ts), and the calls that
 * enqueue deliveries are handed its `traceparent` to record (`RECORDS_TRACE`). Calls outside a
 * recording request (the worker's polls, the hub's reads, token reloads) make none: a span per poll would be noise. A
 * rejection sets the status to error with its class as `error.type`, never its message (a
 * PostgreSQL message can quote a value). Each view is one object on prototypes built here once.
 */
export function storeTracer(store: PlantStore, tracer: Tracer, system: DbSystem): StoreTracer {
  const root = tracedPrototype(store, '', tracer, system);
  for (const part of PARTS) {
    const prototype = tracedPrototype(store[part], `${part}.`, tracer, system);
    Object.defineProperty(root, part, {
      get(this: { [PARENT]: Span }) {
        const view = Object.create(prototype);
        view[PARENT] = this[PARENT];
        Object.defineProperty(this, part, { value: view });
        return view;
      },
    });
  }
  return (parent) => {
    if (!parent?.isRecording()) return store;
    const view = Object.create(root);
    view[PARENT] = parent;
    return view;
  };
}

function tracedPrototype(target: object, prefix: string, tracer: Tracer, system: DbSystem): object {
  const prototype: Record<string, unknown> = {};
  for (const [name, member] of Object.entries(target)) {
    if (typeof member !== 'function') {
      // Read through (`failed`); the parts are replaced by their traced views.
      Object.defineProperty(prototype, name, {
        get: () => (target as Record<string, unknown>)[name],
        configurable: true,
      });
      continue;
    }
    const operation = prefix + name;
    const recordsTrace = RECORDS_TRACE[operation as Operation];
    const attributes: Attributes = {
      'db.system': system,
      'db.system.name': system,
      'db.operation.name': operation,
    };
    prototype[name] = function (this: { [PARENT]: Span }, ...args: unknown[]) {
      const parent = trace.setSpan(ROOT, this[PARENT]);
      const span = tracer.startSpan(operation, { kind: SpanKind.CLIENT, attributes }, parent);
      if (recordsTrace !== undefined) {
        args = [...args];
        args[recordsTrace] = { ...(args[recordsTrace] as object), traceContext: traceparentOf(span) };
      }
      let result: unknown;
      try {
        result = context.with(trace.setSpan(ROOT, span), () => member.apply(target, args));
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
  return prototype;
}

function fail(span: Span, error: unknown): void {
  span.setAttribute('error.type', error instanceof Error ? error.name : '_OTHER');
  span.setStatus({ code: SpanStatusCode.ERROR });
  span.end();
}
