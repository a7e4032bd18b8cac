// `backlog`: BENCH_BACKLOG_SECONDS (60) of REST creates on the api (SQLite) with one webhook
// subscriber, a fast receiver on loopback, no warm-up: the deliveries still pending in the outbox
// when the load stops, in seconds of the create rate (the target: under 5 s of traffic).

import { round1 } from '../lib/format.mjs';
import { progress, warn } from '../lib/session.mjs';
import { describeRun, runErrors, summarize } from '../lib/summary.mjs';
import { scenarioRun, SCENARIOS } from './compare.mjs';

export async function backlog(settings) {
  const seconds = settings.backlogSeconds;
  progress(`[backlog] ${seconds} s of REST creates with one webhook subscriber …`);
  let run;
  try {
    run = await scenarioRun(settings, SCENARIOS.webhook, { duration: seconds, warmup: 0 });
  } catch (error) {
    progress(`[backlog] FAILED: ${error.message}`);
    warn(`backlog: the run failed: ${error.message}`);
    return { seconds, error: error.message };
  }
  progress(
    `[backlog] ${describeRun(run)}; ${run.webhook.pending} deliveries pending (${run.webhook.backlogSeconds} s of traffic)`,
  );
  summarize('backlog', [run]);
  return {
    seconds,
    createsPerSec: round1(run.createsPerSec),
    p99: run.latency.p99,
    errors: runErrors(run),
    non2xx: run.non2xx,
    peakRssMb: run.peakRssMb,
    acked: run.acked,
    pending: run.webhook.pending,
    received: run.webhook.received,
    backlogSeconds: run.webhook.backlogSeconds,
  };
}
