// The tracing scenarios' settings (docs/tracing.md): the api with OpenTelemetry configured but no
// trace sampled, or every span exported to a local collector (bench/otlp-receiver.mjs, on the load
// generator's core).

import { setTimeout as sleep } from 'node:timers/promises';
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
 * Every span exported (`always_on`) over OTLP/HTTP protobuf to a collector that answers at once,
 * with a queue large enough that none is dropped at this rate (the default, 2,048, dropped about a
 * sixth at 5,000 creates/s on a busy machine: one export runs at a time). The batch stays at the
 * SDK's default, 512: batches of 2,048 kept each span queued four times as long, past the young
 * generation's collections, and V8 then promoted and marked them (a GET exported 0.67× of a GET
 * untraced, against 0.77× with 512; docs/tracing.md). `afterLoad` reads how many spans arrived, so
 * drops would show.
 */
export async function exportedTracing(dir) {
  const collector = await spawnServer('otlp-receiver', { dir, logToFile: false, cpu: 'load' });
  await collector.ready();
  return {
    env: {
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
      OTEL_TRACES_SAMPLER: 'always_on',
      OTEL_BSP_MAX_QUEUE_SIZE: '8192',
    },
    async afterLoad() {
      // One schedule delay (OTEL_BSP_SCHEDULE_DELAY, 5 s), so what was still queued has been sent.
      await sleep(5_500);
      const counts = JSON.parse((await send(collector.url, { path: '/count' })).text);
      return { otlp: counts };
    },
    close: () => collector.stop(),
  };
}
