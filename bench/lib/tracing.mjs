// The tracing scenarios' settings (docs/tracing.md): the api with OpenTelemetry configured but no
// trace sampled, or every span exported to a local collector (bench/otlp-receiver.mjs, on the load
// generator's core).

import { send, spawnServer } from './system.mjs';

/**
 * "Configured but unsampled": an endpoint set (the SDK loaded, a non-recording span per request,
 * its context propagated and logged) and `OTEL_TRACES_SAMPLER=always_off`, what a deployment
 * sampling a small share of its traces pays for the rest. Nothing is ever exported, so the
 * endpoint is never contacted (an unreachable one would measure failed exports instead).
 */
export function unsampledTracing() {
  return { env: { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9', OTEL_TRACES_SAMPLER: 'always_off' } };
}

/**
 * Every span exported (`always_on`) over OTLP/HTTP protobuf, with the default batching, to a
 * collector that answers at once. `afterLoad` reads how many spans arrived: the batch processor
 * drops spans past its queue (OTEL_BSP_MAX_QUEUE_SIZE) rather than slow the requests.
 */
export async function exportedTracing(dir) {
  const collector = await spawnServer('otlp-receiver', { dir, logToFile: false, cpu: 'load' });
  await collector.ready();
  return {
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_TRACES_SAMPLER: 'always_on' },
    async afterLoad() {
      const counts = JSON.parse((await send(collector.url, { path: '/count' })).text);
      return { otlp: counts };
    },
    close: () => collector.stop(),
  };
}
