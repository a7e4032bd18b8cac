// `backlog`: BENCH_BACKLOG_SECONDS (60) of REST creates with one webhook subscriber (a fast receiver on
// loopback), no warm-up: the deliveries still pending when the load stops, in seconds of the create
// rate. The target: under 5 s of traffic.
import { describeRun, runScenario, summarize } from '../lib/measure.mjs';
import { progress } from '../lib/session.mjs';
import { fmtInt, fmtMs, table, target } from '../lib/stats.mjs';

async function run(settings) {
  const result = await runScenario(settings, 'webhook', { duration: settings.backlogSeconds, warmup: 0 });
  progress(`[backlog] ${describeRun(result)}; ${result.webhook.pending} deliveries pending`);
  return { seconds: settings.backlogSeconds, ...summarize('backlog', [result]), ...result.webhook };
}

const render = (b) => [
  `## Webhook backlog: ${b.seconds} s of REST creates with one subscriber`,
  '',
  table(
    ['creates/s', 'p99 ms', 'peak RSS MiB', 'delivered', 'pending at the end', 'backlog (s of traffic)'],
    [
      [
        fmtInt(b.donePerSec),
        fmtMs(b.p99),
        b.peakRssMb,
        fmtInt(b.received),
        fmtInt(b.pending),
        b.backlogSeconds,
      ],
    ],
  ),
];

const targets = (b) => [
  target(
    `Outbox backlog after ${b.seconds} s < 5 s of traffic`,
    `${b.backlogSeconds} s`,
    b.backlogSeconds < 5,
  ),
  target(
    'Every create answered and stored (check)',
    `${b.notOk + b.errors} not ok, ${b.lost} lost`,
    b.notOk + b.errors + b.lost === 0,
  ),
];

export default { name: 'backlog', run, render, targets };
