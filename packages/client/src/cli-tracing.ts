import { context, propagation, SpanStatusCode, trace } from '@opentelemetry/api';
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
  TraceIdRatioBasedSampler,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import { UsageError } from './cli-support.ts';

/** The CLI's `service.name` unless OTEL_SERVICE_NAME (or OTEL_RESOURCE_ATTRIBUTES) names one. */
const SERVICE_NAME = 'plants-cli';
/** How long the spans may take to reach the collector at exit: a collector that is down cannot hold the CLI. */
const FLUSH_MS = 2_000;

/** A command's span: `run` runs it inside, sends the span, and resolves with the command's exit code. */
export type CliTracing = { run(name: string, command: () => Promise<number>): Promise<number> };

/**
 * Traces the `plants` command with OpenTelemetry's standard variables, as the api reads them
 * (docs/tracing.md): a span per command, `plants <command>`, whose requests carry its
 * `traceparent`, sent over OTLP/HTTP to OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else
 * OTEL_EXPORTER_OTLP_ENDPOINT + `/v1/traces`; `undefined` without either or with
 * OTEL_SDK_DISABLED=true. Loaded by cli.ts only when an endpoint is set. A bad value is a usage
 * error naming the variable.
 */
export function startCliTracing(env: Readonly<Record<string, string | undefined>>): CliTracing | undefined {
  const given = (name: string) => (env[name] === '' ? undefined : env[name]);
  if (given('OTEL_SDK_DISABLED')?.toLowerCase() === 'true') return undefined;
  const base = given('OTEL_EXPORTER_OTLP_ENDPOINT');
  const url =
    given('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT') ?? (base && `${base.replace(/\/+$/, '')}/v1/traces`);
  if (url === undefined) return undefined;
  if (!/^https?:\/\//.test(url))
    throw new UsageError('OTEL_EXPORTER_OTLP_ENDPOINT must be an http:// or https:// URL.');
  const protocol =
    given('OTEL_EXPORTER_OTLP_TRACES_PROTOCOL') ?? given('OTEL_EXPORTER_OTLP_PROTOCOL') ?? 'http/protobuf';
  if (protocol !== 'http/protobuf' && protocol !== 'http/json') {
    throw new UsageError('OTEL_EXPORTER_OTLP_PROTOCOL must be http/protobuf or http/json.');
  }
  const detected = detectResources({ detectors: [envDetector] });
  const provider = new TracerProvider({
    resource: detected.merge(
      resourceFromAttributes({
        'service.name':
          given('OTEL_SERVICE_NAME') ??
          (detected.attributes['service.name'] as string | undefined) ??
          SERVICE_NAME,
      }),
    ),
    sampler: sampler(
      given('OTEL_TRACES_SAMPLER') ?? 'parentbased_always_on',
      given('OTEL_TRACES_SAMPLER_ARG'),
    ),
    spanProcessors: [
      new BatchSpanProcessor({
        exporter: protocol === 'http/json' ? new JsonExporter({ url }) : new ProtobufExporter({ url }),
      }),
    ],
  });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  const tracer = provider.getTracer('@plant-store/client');
  return {
    run: (name, command) =>
      tracer.startActiveSpan(name, async (span) => {
        try {
          const code = await command();
          span.setAttribute('process.exit.code', code);
          if (code !== 0) span.setStatus({ code: SpanStatusCode.ERROR });
          return code;
        } catch (error) {
          span.setAttribute('error.type', error instanceof Error ? error.name : '_OTHER');
          span.setStatus({ code: SpanStatusCode.ERROR });
          throw error;
        } finally {
          span.end();
          await Promise.race([
            provider.shutdown().catch(() => {}),
            new Promise((r) => setTimeout(r, FLUSH_MS).unref()),
          ]);
        }
      }),
  };
}

/** OTEL_TRACES_SAMPLER and its argument, as the specification defines them. */
function sampler(name: string, arg: string | undefined): Sampler {
  const ratio = arg === undefined ? 1 : Number(arg);
  if (!(ratio >= 0 && ratio <= 1))
    throw new UsageError('OTEL_TRACES_SAMPLER_ARG must be a number from 0 to 1.');
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
    default:
      throw new UsageError(
        `OTEL_TRACES_SAMPLER must be one of always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio ("${name}").`,
      );
  }
}
