/**
 * Both clients carry the caller's OpenTelemetry context to the server (`traceparent`), and the
 * `plants` CLI is traced by the standard OTEL_* variables: a span per command, its requests
 * continuing it. The OpenTelemetry SDK is registered here as an application would register it.
 */
import { context, propagation, type Span, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { TracerProvider } from '@opentelemetry/sdk-trace';
import { startOtlpReceiver } from '@plant-store/api/testing/otlp-receiver';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRestClient, createTrpcClient } from '../../src/index.ts';
import { type FakeServer, sendJson, startFakeServer } from '../support/fake-server.ts';
import { runPlants } from '../support/plants-cli.ts';

const TOKEN = 'trace-test-token-0123456789';
const provider = new TracerProvider();
const tracer = provider.getTracer('a-calling-app');

let server: FakeServer;
beforeAll(async () => {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  server = await startFakeServer((res, request) => {
    if (request.url.startsWith('/trpc/')) {
      // tRPC's error shape, for every call of a batch: the test reads only what was sent.
      const calls = request.url.split('?')[0]!.split(',').length;
      const error = { error: { json: { message: 'no', code: -32004, data: { httpStatus: 404 } } } };
      sendJson(res, 404, request.url.includes('batch=1') ? Array(calls).fill(error) : error);
      return;
    }
    sendJson(res, 200, '{"id":1,"name":"Fern","version":1}');
  });
});
afterAll(async () => {
  await server?.close();
  await provider.shutdown();
});

const traceparentOf = (span: Span) => `00-${span.spanContext().traceId}-${span.spanContext().spanId}-01`;
const sentSince = (from: number) => server.requests.slice(from).map((request) => request.headers.traceparent);

describe('REST client', () => {
  it("sends the caller's traceparent with each call, and none outside a span", async () => {
    const rest = createRestClient({ baseUrl: server.url, token: TOKEN });
    const from = server.requests.length;
    const span = tracer.startSpan('caller');
    await context.with(trace.setSpan(context.active(), span), () => rest.getPlant(1n));
    span.end();
    await rest.getPlant(1n);
    expect(sentSince(from)).toEqual([traceparentOf(span), undefined]);
  });
});

describe('tRPC client', () => {
  it("sends the caller's traceparent with a batch (its first call's) and with a keyed call", async () => {
    const trpc = createTrpcClient({ baseUrl: server.url, token: TOKEN, retry: { attempts: 1 } });
    const from = server.requests.length;
    const first = tracer.startSpan('first');
    const second = tracer.startSpan('second');
    const call = (span: Span, run: () => Promise<unknown>) =>
      context.with(trace.setSpan(context.active(), span), () => run().catch(() => undefined));
    // Two calls in one tick: one batched request.
    await Promise.all([
      call(first, () => trpc.plants.get.query({ id: 1n })),
      call(second, () => trpc.plants.get.query({ id: 2n })),
    ]);
    await call(second, () =>
      trpc.plants.create.mutate({ id: 3n, name: 'Fern' }, { context: { idempotencyKey: 'k-1' } }),
    );
    await trpc.plants.get.query({ id: 4n }).catch(() => undefined);
    first.end();
    second.end();
    expect(server.requests.slice(from).map((request) => request.url.split('?')[0])).toEqual([
      '/trpc/plants.get,plants.get',
      '/trpc/plants.create',
      '/trpc/plants.get',
    ]);
    expect(sentSince(from)).toEqual([traceparentOf(first), traceparentOf(second), undefined]);
  });
});

describe('plants CLI', () => {
  it.each(['http/protobuf', 'http/json'])(
    'sends one span per command over OTLP %s, continued by its requests',
    async (protocol) => {
      const collector = await startOtlpReceiver();
      try {
        const from = server.requests.length;
        const run = await runPlants(['get', '1'], {
          PLANTS_URL: server.url,
          PLANTS_TOKEN: TOKEN,
          OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
          OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
        });
        expect(run).toMatchObject({ code: 0, stderr: '' });
        const [span] = await collector.waitFor((spans) => spans.length === 1);
        expect(span).toMatchObject({
          name: 'plants get',
          parentSpanId: '',
          service: 'plants-cli',
          scope: '@plant-store/client',
          status: { code: 0 },
          attributes: { 'process.exit.code': 0 },
        });
        expect(sentSince(from)).toEqual([`00-${span!.traceId}-${span!.spanId}-01`]);
      } finally {
        await collector.close();
      }
    },
  );

  it('sends no traceparent and no span without an endpoint', async () => {
    const from = server.requests.length;
    const run = await runPlants(['get', '1'], { PLANTS_URL: server.url, PLANTS_TOKEN: TOKEN });
    expect(run.code).toBe(0);
    expect(sentSince(from)).toEqual([undefined]);
  });

  it('refuses a bad OTEL_* value as a usage error naming it', async () => {
    const run = await runPlants(['get', '1'], {
      PLANTS_URL: server.url,
      PLANTS_TOKEN: TOKEN,
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
    });
    expect(run).toMatchObject({ code: 2 });
    expect(run.stderr).toContain('OTEL_EXPORTER_OTLP_PROTOCOL must be http/protobuf or http/json');
  });
});
