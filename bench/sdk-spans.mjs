// What the OpenTelemetry SDK alone spends on the spans of one traced GET /plants/{id}, with no
// server around it: the api's two spans (the request's SERVER span with its attributes, and the
// store read's CLIENT span, its child) made, ended, batched and exported over OTLP/HTTP protobuf
// to the bench's collector (bench/otlp-receiver.mjs, started here on the load generator's core),
// with the SDK's defaults (batches of 512). Issue 26 asks exported tracing to cost at most a
// quarter of what a GET costs untraced: this is the part of that no integration can take away.
//
//   taskset -c 0 node bench/sdk-spans.mjs [gets, default 200000]
//
// Prints the process's CPU time per GET (after 50,000 unmeasured). Instructions, which carry across
// machines: run it under `valgrind --tool=callgrind node --single-threaded bench/sdk-spans.mjs N`
// for two values of N; the difference of the totals over the difference of N.
import { ROOT_CONTEXT, SpanKind, trace } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { AlwaysOnSampler, BatchSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { installCleanup, makeTempDir, send, spawnServer } from './lib/system.mjs';

const gets = Number(process.argv[2] ?? 200_000);
const WARM_UP = 50_000;
installCleanup();
const collector = await spawnServer('otlp-receiver', {
  dir: makeTempDir('sdk-spans'),
  logToFile: false,
  cpu: 'load',
});
await collector.ready();
const { url } = collector;

const provider = new TracerProvider({
  resource: resourceFromAttributes({ 'service.name': 'plant-store-api' }),
  sampler: new AlwaysOnSampler(),
  spanProcessors: [
    // A queue no run fills: a dropped span would cost less than an exported one.
    new BatchSpanProcessor({
      exporter: new OTLPTraceExporter({ url: `${url}/v1/traces` }),
      maxQueueSize: 8192,
    }),
  ],
});
const tracer = provider.getTracer('plant-store-api');
const SERVER = { kind: SpanKind.SERVER };
const READ = {
  kind: SpanKind.CLIENT,
  attributes: { 'db.system': 'sqlite', 'db.system.name': 'sqlite', 'db.operation.name': 'get' },
};

/** The spans the api makes for one GET /plants/{id} (http/trace.ts, tracing/store.ts). */
function traceOneGet(id) {
  const span = tracer.startSpan('GET', SERVER, ROOT_CONTEXT);
  span.setAttributes({
    'http.request.method': 'GET',
    'url.scheme': 'http',
    'url.path': `/plants/${id}`,
    'network.protocol.version': '1.1',
  });
  tracer.startSpan('get', READ, trace.setSpan(ROOT_CONTEXT, span)).end();
  span.setAttribute('http.route', '/plants/{id}');
  span.updateName('GET /plants/{id}');
  span.setAttribute('http.response.status_code', 200);
  span.end();
}

/** `count` GETs' spans, 16 to an event-loop turn (the bench's 16 connections), then all exported. */
async function run(count) {
  for (let i = 0; i < count; i++) {
    traceOneGet(i);
    if (i % 16 === 15) await new Promise(setImmediate);
  }
  await provider.forceFlush();
}

await run(WARM_UP);
const before = process.cpuUsage();
await run(gets);
const cpu = process.cpuUsage(before);
const { spans } = JSON.parse((await send(url, { path: '/count' })).text);
console.log(
  JSON.stringify({
    gets,
    cpuMicrosecondsPerGet: Math.round(((cpu.user + cpu.system) / gets) * 10) / 10,
    spansExported: spans,
  }),
);
await provider.shutdown();
await collector.stop();
