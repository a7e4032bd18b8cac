import { context, propagation, type Tracer, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  type Sampler,
  type SpanExporter,
  TraceIdRatioBasedSampler,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import type { Logger } from 'pino';
import type { TracingConfig } from '../config/config.ts';
import { commitSpans } from './commit.ts';
import { exportLog, watchedExporter } from './export-watch.ts';
import { SERVICE_NAME, STORE_TRACER_NAME, TRACER_NAME, type Tracing } from './tracer.ts';

/**
 * Starts the OpenTelemetry SDK as `config` says: spans batched and POSTed to the collector over
 * OTLP/HTTP (protobuf or JSON), W3C Trace Context propagation; with `log`, exports that fail are
 * logged there (rate-limited). Registered globally, as OpenTelemetry's API expects, with its
 * AsyncLocalStorage context manager: a span made active (a store call's, a rate limiter's
 * request) stays so across the awaits of the work it runs. The exporter
 * reads the rest of the standard variables itself (OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT,
 * _COMPRESSION, and their _TRACES_ forms), the resource OTEL_RESOURCE_ATTRIBUTES.
 *
 * Imported dynamically by main.ts, only when tracing is on: a service without it never loads the
 * SDK. This module imports it statically, so the bundle keeps its exports intact in the chunk.
 */
export function startTracing(
  config: TracingConfig,
  { exporter = otlpExporter(config), log }: { exporter?: SpanExporter; log?: Logger } = {},
): Tracing {
  const detected = detectResources({ detectors: [envDetector] });
  const serviceName =
    config.serviceName ?? (detected.attributes['service.name'] as string | undefined) ?? SERVICE_NAME;
  const provider = new TracerProvider({
    resource: detected.merge(resourceFromAttributes({ 'service.name': serviceName })),
    sampler: sampler(config.sampler),
    spanProcessors: [
      new BatchSpanProcessor({
        // Spans the collector does not take are dropped: said in the log (export-watch.ts).
        exporter: log ? watchedExporter(exporter, exportLog(log, new URL(config.url).origin)) : exporter,
        scheduledDelayMillis: config.scheduleDelayMs,
        maxQueueSize: config.maxQueueSize,
        maxExportBatchSize: config.maxExportBatchSize,
      }),
    ],
  });
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  // Once a process: a second start (tests) keeps the manager the first registered.
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(provider);
  const tracer: Tracer = provider.getTracer(TRACER_NAME);
  return {
    tracer,
    commits: commitSpans(provider.getTracer(STORE_TRACER_NAME)),
    // Spans still batched are sent before the process exits.
    shutdown: () => provider.shutdown(),
  };
}

function otlpExporter({ url, protocol }: TracingConfig): SpanExporter {
  return protocol === 'http/json' ? new JsonExporter({ url }) : new ProtobufExporter({ url });
}

/** OTEL_TRACES_SAMPLER and its argument, as the specification defines them. */
function sampler({ name, ratio }: TracingConfig['sampler']): Sampler {
  switch (name) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(ratio);
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio) });
  }
}
