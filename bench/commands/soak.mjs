// `soak`: BENCH_SOAK_SECONDS (300) of REST creates on one api process, its RSS read every second.
// The plateau rule: the largest RSS of the last minute is at most the largest of the second minute
// plus 10 MiB (judged from 3 minutes on).
import { describeRun, measureRun, summarize } from '../lib/measure.mjs';
import { progress } from '../lib/session.mjs';
import { fmtInt, fmtMs, max, table, target } from '../lib/stats.mjs';
import { makeTempDir, removeTempDir } from '../lib/system.mjs';
import { RSS_LIMIT_MB } from './compare.mjs';

const PLATEAU_MARGIN_MB = 10;

async function run(settings) {
  const seconds = settings.soakSeconds;
  const dir = makeTempDir('soak', settings.tmpBase);
  let result;
  try {
    result = await measureRun(settings, {
      load: 'rest',
      dir,
      idStart: 0,
      duration: seconds,
      warmup: 0,
      samples: true,
    });
  } finally {
    removeTempDir(dir);
  }
  progress(`[soak] ${describeRun(result)}`);
  const rss = result.rssSamples;
  const peakOf = (from, to) => max(rss.filter((s) => s.t >= from && s.t < to).map((s) => s.mb));
  return {
    seconds,
    ...summarize('soak', [result]),
    secondMinuteMb: seconds >= 180 ? peakOf(60, 120) : null,
    lastMinuteMb: seconds >= 180 ? peakOf(seconds - 60, seconds + 1) : null,
    rss: rss.map((s) => Math.round(s.mb)),
  };
}

const render = (s) => [
  `## Soak: ${s.seconds} s of REST creates, the server's RSS every second`,
  '',
  table(
    ['creates/s', 'p50 ms', 'p99 ms', 'peak RSS MiB', 'max RSS, 2nd minute', 'max RSS, last minute'],
    [
      [
        fmtInt(s.donePerSec),
        fmtMs(s.p50),
        fmtMs(s.p99),
        s.peakRssMb,
        s.secondMinuteMb ?? 'n/a',
        s.lastMinuteMb ?? 'n/a',
      ],
    ],
  ),
  `RSS (MiB) each second: ${s.rss.join(' ')}`,
  '',
];

const targets = (s) => [
  target(`Soak peak RSS ≤ ${RSS_LIMIT_MB} MiB`, `${s.peakRssMb} MiB`, s.peakRssMb <= RSS_LIMIT_MB),
  target(
    `Soak RSS plateau: max of the last minute ≤ max of the second minute + ${PLATEAU_MARGIN_MB} MiB`,
    s.lastMinuteMb === null ? `n/a (needs ≥ 180 s)` : `${s.lastMinuteMb} vs ${s.secondMinuteMb} MiB`,
    s.lastMinuteMb === null ? null : s.lastMinuteMb <= s.secondMinuteMb + PLATEAU_MARGIN_MB,
  ),
  target(
    'Every soak create answered and stored (check)',
    `${s.notOk + s.errors} not ok, ${s.lost} lost`,
    s.notOk + s.errors + s.lost === 0,
  ),
];

export default { name: 'soak', run, render, targets };
