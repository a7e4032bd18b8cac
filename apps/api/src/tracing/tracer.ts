import type { Tracer } from '@opentelemetry/api';
import type { CommitObserver } from '../store/contract.ts';

/** The instrumentation scope of every span the api makes. */
export const TRACER_NAME = 'plant-store-api';

/** The instrumentation scope of the store's group commit spans (tracing/commit.ts). */
export const STORE_TRACER_NAME = 'plant-store-api/store';

/** `service.name` when neither OTEL_SERVICE_NAME nor OTEL_RESOURCE_ATTRIBUTES names one. */
export const SERVICE_NAME = 'plant-store-api';

/**
 * The SDK started (tracing/sdk.ts): the tracer every instrumented part is given (none given:
 * tracing is off, and nothing is instrumented), and the flush at exit.
 */
export type Tracing = {
  tracer: Tracer;
  /** What the store is opened with to trace its group commits (tracing/commit.ts). */
  commits: CommitObserver;
  /** Sends the spans still batched, then stops exporting. */
  shutdown(): Promise<void>;
};
