// `soak`: BENCH_SOAK_SECONDS (300) of REST creates on one api process, its RSS read every second.
// The plateau rule: the largest RSS of the last minute is at most the largest of the second minute
// plus 10 MiB (needs at least 3 minutes). The trend, the least-squares slope of RSS over the last
// two thirds, is reported beside it.

import { join } from 'node:path';
import { round1, round2 } from '../lib/format.mjs';
import { measureRun } from '../lib/measure.mjs';
import { progress, warn } from '../lib/session.mjs';
import { sqliteRowCounter } from '../lib/sqlite.mjs';
import { ratio, slope, sum } from '../lib/stats.mjs';
import { describeRun, runErrors, summarize } from '../lib/summary.mjs';
import { makeTempDir, removeTempDir } from '../lib/system.mjs';

/** How much the last minute's peak RSS may exceed the second minute's (MiB). */
export const PLATEAU_MARGIN_MB = 10;

export async function soak(settings) {
  const seconds = settings.soakSeconds;
  progress(`[soak] ${seconds} s of REST creates …`);
  const dir = makeTempDir('soak', settings.tmpBase);
  let run;
  try {
    run = await measureRun(settings, {
      kind: 'api',
      load: 'rest',
      dir,
      idMode: settings.ids,
      idStart: 0,
      duration: seconds,
      warmup: 0,
      sampleEveryMs: 1000,
      keepSamples: true,
      countRows: sqliteRowCounter(join(dir, 'plants.db')),
    });
  } catch (error) {
    progress(`[soak] FAILED: ${error.message}`);
    warn(`soak: the run failed: ${error.message}`);
    return { seconds, error: error.message };
  } finally {
    removeTempDir(dir);
  }
  progress(`[soak] ${describeRun(run)}`);
  summarize('soak', [run]);
  const samples = run.rssSamples;
  const warmupEnd = seconds / 3;
  const after = samples.filter((s) => s.t >= warmupEnd && s.t <= seconds + 0.5);
  const perMinute = slope(after.map((s) => ({ x: s.t, y: s.mb })));
  const thirds = (list) => {
    const n = Math.floor(list.length / 3);
    return n === 0 ? [null, null] : [list.slice(0, n), list.slice(-n)].map((part) => sum(part) / part.length);
  };
  const [firstThird, lastThird] = thirds(run.perSecond);
  const maxOf = (list) => (list.length ? round1(Math.max(...list.map((s) => s.mb))) : null);
  const secondMinuteMax = seconds >= 180 ? maxOf(samples.filter((s) => s.t >= 60 && s.t < 120)) : null;
  const lastMinuteMax =
    seconds >= 180 ? maxOf(samples.filter((s) => s.t > seconds - 60 && s.t <= seconds + 0.5)) : null;
  const { rssSamples, ...rest } = run;
  return {
    seconds,
    createsPerSec: round1(run.createsPerSec),
    p50: run.latency.p50,
    p99: run.latency.p99,
    non2xx: run.non2xx,
    errors: runErrors(run),
    rssMinMb: round1(Math.min(...samples.map((s) => s.mb))),
    rssMaxMb: round1(Math.max(...samples.map((s) => s.mb))),
    rssMinAfterWarmupMb: after.length ? round1(Math.min(...after.map((s) => s.mb))) : null,
    rssMaxAfterWarmupMb: after.length ? round1(Math.max(...after.map((s) => s.mb))) : null,
    peakRssMb: run.peakRssMb,
    trendMbPerMin: perMinute === null ? null : round2(perMinute * 60),
    trendWindow: `${round1(warmupEnd)}–${seconds} s`,
    secondMinuteMaxMb: secondMinuteMax,
    lastMinuteMaxMb: lastMinuteMax,
    plateau:
      secondMinuteMax === null || lastMinuteMax === null
        ? null
        : lastMinuteMax <= secondMinuteMax + PLATEAU_MARGIN_MB,
    throughputLastVsFirstThird: round2(ratio(lastThird, firstThird)),
    acked: run.acked,
    stored: run.stored,
    rssSamples,
    run: rest,
  };
}
