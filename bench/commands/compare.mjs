// `compare`: the api beside its bare baselines. The scenarios run interleaved (round 1 runs A B C D,
// round 2 B C D A, …), BENCH_RUNS rounds, each run on a fresh server and store; every figure is a
// median, and every ratio is against the scenario's baseline measured in the same invocation.
import { basename } from 'node:path';
import { interleave, runScenario, summarize } from '../lib/measure.mjs';
import { SCENARIOS } from '../lib/scenarios.mjs';
import { atLeast, fmtInt, fmtMs, fmtNum, fmtRatio, ratio, round2, table, target } from '../lib/stats.mjs';

/** Peak RSS the server may reach in any scenario (MiB). */
export const RSS_LIMIT_MB = 150;
/** Targets between two api scenarios: the first's throughput at least `min` × the second's. */
const BETWEEN = [
  ['trpc', 'rest', 0.9],
  ['webhook', 'rest', 0.45],
];

async function run(settings) {
  const names = settings.scenarios;
  const runs = await interleave(settings, 'compare', names, (name, round) =>
    runScenario(settings, name, { round }),
  );
  const summary = {};
  for (const name of names) {
    summary[name] = { against: SCENARIOS[name].against, ...summarize(name, runs[name]) };
    const backlogs = runs[name].flatMap((r) => (r.webhook ? [r.webhook.backlogSeconds] : []));
    if (backlogs.length) summary[name].backlogSeconds = backlogs;
  }
  for (const s of Object.values(summary)) {
    s.vsBaseline = round2(ratio(s.donePerSec, summary[s.against]?.donePerSec));
    s.p99VsBaseline = round2(ratio(s.p99, summary[s.against]?.p99));
  }
  return {
    summary,
    runs: Object.fromEntries(names.map((n) => [n, runs[n].map(({ rssSamples, ...r }) => r)])),
  };
}

function render({ summary }, settings) {
  const rows = Object.entries(summary).map(([name, s]) => [
    SCENARIOS[name].title,
    s.against === name ? '—' : s.against,
    ...(s.runs === 0
      ? ['failed', '', '', '', '', '', '', '', '', s.error.slice(0, 120)]
      : [
          fmtInt(s.reqPerSec),
          fmtInt(s.donePerSec),
          fmtRatio(s.vsBaseline),
          fmtMs(s.p50),
          fmtMs(s.p99),
          fmtRatio(s.p99VsBaseline),
          fmtNum(s.peakRssMb),
          fmtNum(s.serverCpuUs),
          `${s.notOk} / ${s.errors}`,
          `${s.perRun.map(fmtInt).join(' · ')}${s.failed ? ` (${s.failed} failed)` : ''}`,
        ]),
  ]);
  const notes = Object.entries(summary).flatMap(([name, s]) =>
    s.backlogSeconds
      ? [
          `- ${name}: outbox backlog when the load stopped, in seconds of traffic: ${s.backlogSeconds.join(' · ')}`,
        ]
      : [],
  );
  return [
    `## Side by side: median of ${settings.runs} interleaved run(s), ${settings.connections} connections, ${settings.duration} s after ${settings.warmup} s of warm-up, tRPC batches of ${settings.batch}`,
    '',
    `![The api beside its baselines](${basename(settings.out)}.svg)`,
    '',
    table(
      [
        'scenario',
        'against',
        'req/s',
        'creates/s (reads: answers/s)',
        '× against',
        'p50 ms',
        'p99 ms',
        'p99 × against',
        'peak RSS MiB',
        'server CPU µs/req',
        'not ok / errors',
        'per run',
      ],
      rows,
    ),
    ...notes,
    '',
  ];
}

function targets({ summary: c }) {
  const out = [];
  for (const [name, s] of Object.entries(c)) {
    const min = SCENARIOS[name].target;
    if (min === undefined || !c[s.against]) continue;
    out.push(atLeast(`${SCENARIOS[name].title}, × ${s.against}`, s.vsBaseline, min));
  }
  if (c.rest?.p99VsBaseline != null)
    out.push(
      target(
        'REST create p99 ≤ 1.5× the bare create p99',
        fmtRatio(c.rest.p99VsBaseline),
        c.rest.p99VsBaseline <= 1.5,
      ),
    );
  for (const [a, b, min] of BETWEEN)
    if (c[a] && c[b]) out.push(atLeast(`${a}, × ${b}`, round2(ratio(c[a].donePerSec, c[b].donePerSec)), min));
  const api = Object.entries(c).filter(([name, s]) => !SCENARIOS[name].server && s.runs > 0);
  if (api.length > 0) {
    const [worst, s] = api.reduce((a, b) => (b[1].peakRssMb > a[1].peakRssMb ? b : a));
    out.push(
      target(
        `Server peak RSS ≤ ${RSS_LIMIT_MB} MiB in every scenario`,
        `${s.peakRssMb} MiB (${worst})`,
        s.peakRssMb <= RSS_LIMIT_MB,
      ),
    );
  }
  const measured = Object.values(c);
  const bad = measured.reduce((n, s) => n + (s.runs === 0 ? 1 : s.notOk + s.errors + s.failed), 0);
  out.push(target('Every run answered, no answer not ok, no error (check)', String(bad), bad === 0));
  const lost = measured.reduce((n, s) => n + (s.lost ?? 0), 0);
  out.push(
    target('Every acknowledged create is in the store after the run (check)', `${lost} missing`, lost === 0),
  );
  return out;
}

export default { name: 'compare', run, render, targets };
