// `compare`: the api side by side with the baseline. The scenarios of BENCH_SCENARIOS run
// interleaved (round 1 runs A B C D, round 2 B C D A, …), BENCH_RUNS rounds, each run on a fresh
// server and store; every figure is then a median, and every ratio is against this baseline.

import { join } from 'node:path';
import { round2 } from '../lib/format.mjs';
import { measureRun } from '../lib/measure.mjs';
import { progress } from '../lib/session.mjs';
import { sqliteRowCounter } from '../lib/sqlite.mjs';
import { ratio, rotate } from '../lib/stats.mjs';
import { describeRun, stripRuns, summarize } from '../lib/summary.mjs';
import { makeTempDir, removeTempDir } from '../lib/system.mjs';
import baseline from './baseline.mjs';
import postgres from './postgres.mjs';
import rest from './rest.mjs';
import trpc from './trpc.mjs';
import trpcBatch from './trpc-batch.mjs';

const SCENARIOS = Object.fromEntries([baseline, rest, trpc, trpcBatch, postgres].map((s) => [s.name, s]));

async function compareRun(settings, scenario, round) {
  const dir = makeTempDir(scenario.name, settings.tmpBase);
  let store;
  try {
    store = await scenario.openStore?.(settings, round);
    return await measureRun(settings, {
      kind: scenario.kind,
      load: scenario.load,
      dir,
      databaseUrl: store?.databaseUrl,
      idMode: settings.ids,
      idStart: store?.idStart ?? 0,
      duration: settings.duration,
      warmup: settings.warmup,
      countRows: store ? store.countRows : sqliteRowCounter(join(dir, 'plants.db')),
    });
  } finally {
    await store?.close();
    removeTempDir(dir);
  }
}

export async function compare(settings) {
  const names = settings.scenarios;
  const runs = Object.fromEntries(names.map((name) => [name, []]));
  for (let round = 0; round < settings.runs; round++) {
    for (const name of rotate(names, round)) {
      const label = `[compare ${round + 1}/${settings.runs}] ${name}`;
      progress(`${label} …`);
      try {
        const run = await compareRun(settings, SCENARIOS[name], round);
        runs[name].push(run);
        progress(`${label}: ${describeRun(run)}`);
      } catch (error) {
        runs[name].push({ error: error.message });
        progress(`${label}: FAILED: ${error.message}`);
      }
    }
  }
  const summary = {};
  for (const name of names) {
    const scenario = SCENARIOS[name];
    summary[name] = { title: scenario.title(settings), ...summarize(name, runs[name], scenario.kind) };
  }
  const base = summary.baseline;
  for (const name of names) {
    const s = summary[name];
    s.vsBaseline = round2(ratio(s.createsPerSec, base?.createsPerSec));
    s.p99VsBaseline = round2(ratio(s.p99, base?.p99));
  }
  return { summary, runs: stripRuns(runs) };
}
