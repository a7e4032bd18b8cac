// `cold`: time from `spawn` to the first 200 on POST /plants (fresh data directory, so including
// the migration), polling as fast as refusals come back; api and baseline interleaved.

import { round1 } from '../lib/format.mjs';
import { startServer } from '../lib/measure.mjs';
import { progress, TOKEN, warn } from '../lib/session.mjs';
import { median, rotate } from '../lib/stats.mjs';
import { freePort, makeTempDir, removeTempDir, send } from '../lib/system.mjs';
import { buildRequest } from '../lib/workload.mjs';

async function coldStartOnce(settings, kind) {
  const dir = makeTempDir(`cold-${kind}`, settings.tmpBase);
  try {
    const port = await freePort();
    const started = performance.now();
    const server = await startServer(settings, kind, { dir, port });
    try {
      const request = buildRequest('rest', ['1']);
      const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
      const deadline = started + 20_000;
      for (;;) {
        let answer;
        try {
          answer = await send(server.url, { ...request, headers }, 5000);
        } catch (error) {
          if (server.exited()) throw new Error(`${kind} exited before answering: ${server.stderr().trim()}`);
          if (performance.now() > deadline)
            throw new Error(`${kind} did not answer within 20 s (${error.message})`);
          await new Promise((next) => setImmediate(next));
          continue;
        }
        if (answer.status === 200) return performance.now() - started;
        throw new Error(`${kind}: first answer was HTTP ${answer.status}: ${answer.text.slice(0, 300)}`);
      }
    } finally {
      await server.stop();
    }
  } finally {
    removeTempDir(dir);
  }
}

export async function cold(settings) {
  const kinds = ['api', 'baseline'];
  const times = { api: [], baseline: [] };
  const failures = [];
  for (let round = 0; round < settings.coldRuns; round++) {
    for (const kind of rotate(kinds, round)) {
      try {
        const ms = await coldStartOnce(settings, kind);
        times[kind].push(round1(ms));
        progress(`[cold ${round + 1}/${settings.coldRuns}] ${kind}: ${ms.toFixed(1)} ms`);
      } catch (error) {
        failures.push(error.message);
        progress(`[cold ${round + 1}/${settings.coldRuns}] ${kind}: FAILED: ${error.message}`);
        warn(`cold start: ${error.message}`);
      }
    }
  }
  return {
    runs: settings.coldRuns,
    api: { medianMs: round1(median(times.api)), runsMs: times.api },
    baseline: { medianMs: round1(median(times.baseline)), runsMs: times.baseline },
    failures,
  };
}
