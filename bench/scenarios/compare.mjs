// `compare`: the api side by side with the baselines. The scenarios of BENCH_SCENARIOS run
// interleaved (round 1 runs A B C D, round 2 B C D A, …), BENCH_RUNS rounds, each run on a fresh
// server and store; every figure is then a median, and every ratio is against the baseline of the
// scenario (`against`: the SQLite create baseline unless the scenario names another) measured in
// the same invocation.

import { join } from 'node:path';
import { round2 } from '../lib/format.mjs';
import { measureRun } from '../lib/measure.mjs';
import { progress } from '../lib/session.mjs';
import { sqliteRowCounter } from '../lib/sqlite.mjs';
import { ratio, rotate } from '../lib/stats.mjs';
import { describeRun, stripRuns, summarize } from '../lib/summary.mjs';
import { makeTempDir, removeTempDir } from '../lib/system.mjs';
import baseline from './baseline.mjs';
import baselineGet from './baseline-get.mjs';
import baselineList from './baseline-list.mjs';
import baselinePg from './baseline-pg.mjs';
import floorGet from './floor-get.mjs';
import floorGetKept from './floor-get-kept.mjs';
import floorRest from './floor-rest.mjs';
import floorRestKept from './floor-rest-kept.mjs';
import get from './get.mjs';
import get304 from './get-304.mjs';
import getTraced from './get-traced.mjs';
import getUnsampled from './get-unsampled.mjs';
import list from './list.mjs';
import listBig from './list-big.mjs';
import listTag from './list-tag.mjs';
import baselinePatch from './baseline-patch.mjs';
import patch from './patch.mjs';
import postgres from './postgres.mjs';
import rest from './rest.mjs';
import restTraced from './rest-traced.mjs';
import restUnsampled from './rest-unsampled.mjs';
import trpc from './trpc.mjs';
import trpcBatch from './trpc-batch.mjs';
import webhook from './webhook.mjs';

/** Every scenario, in the order of the report. */
export const SCENARIOS = Object.fromEntries(
  [
    baseline,
    floorRest,
    floorRestKept,
    rest,
    restUnsampled,
    restTraced,
    trpc,
    trpcBatch,
    webhook,
    baselineGet,
    floorGet,
    floorGetKept,
    get,
    getUnsampled,
    getTraced,
    get304,
    baselineList,
    list,
    listBig,
    listTag,
    baselinePatch,
    patch,
    baselinePg,
    postgres,
  ].map((s) => [s.name, s]),
);

/** The scenario a scenario's ratios are against. */
export function againstOf(scenario) {
  return scenario.against ?? (scenario.kind === 'api' ? 'baseline' : scenario.name);
}

/**
 * One run of a scenario on a fresh directory. The scenario's `open` may provide the store
 * (`databaseUrl`, `idStart`, `countRows`, `idModulo`), the api's environment (`env`), what to read
 * once the load stops (`afterLoad`) and `close`.
 */
export async function scenarioRun(settings, scenario, { round = 0, duration, warmup, keepSamples } = {}) {
  const dir = makeTempDir(scenario.name, settings.tmpBase);
  let opened;
  try {
    opened = (await scenario.open?.(settings, { round, dir })) ?? {};
    return await measureRun(settings, {
      kind: scenario.kind,
      load: scenario.load,
      dir,
      databaseUrl: opened.databaseUrl,
      env: opened.env,
      idMode: scenario.idMode ?? settings.ids,
      idStart: opened.idStart ?? 0,
      idModulo: opened.idModulo,
      duration: duration ?? settings.duration,
      warmup: warmup ?? settings.warmup,
      keepSamples,
      sampleEveryMs: keepSamples ? 1000 : undefined,
      countRows:
        opened.countRows === null
          ? undefined
          : (opened.countRows ?? sqliteRowCounter(join(dir, 'plants.db'))),
      afterLoad: opened.afterLoad,
    });
  } finally {
    await opened?.close?.();
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
        const run = await scenarioRun(settings, SCENARIOS[name], { round });
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
    summary[name] = {
      title: scenario.title(settings),
      against: againstOf(scenario),
      reads: scenario.load === 'get' || scenario.load === 'list',
      ...summarize(name, runs[name], scenario.kind),
    };
    const backlogs = runs[name].filter((run) => run.webhook).map((run) => run.webhook.backlogSeconds);
    if (backlogs.length > 0) summary[name].backlogSeconds = backlogs;
    const exported = runs[name].filter((run) => run.otlp).map((run) => run.otlp);
    if (exported.length > 0) summary[name].otlp = exported;
  }
  for (const name of names) {
    const s = summary[name];
    const base = summary[s.against];
    s.vsBaseline = round2(ratio(s.createsPerSec, base?.createsPerSec));
    s.p99VsBaseline = round2(ratio(s.p99, base?.p99));
  }
  return { summary, runs: stripRuns(runs) };
}

/**
 * The scenarios to run: those asked for (`settings.scenarios`, all by default), each with the
 * baseline it is measured against; the PostgreSQL ones only with a database.
 */
export function resolveScenarios(settings) {
  const available = Object.values(SCENARIOS).filter((s) => settings.databaseUrl || !s.postgres);
  const wanted = settings.scenarios ?? available.map((s) => s.name);
  for (const name of wanted) {
    if (!SCENARIOS[name]) throw new Error(`unknown scenario ${name} (${Object.keys(SCENARIOS).join(', ')})`);
    if (SCENARIOS[name].postgres && !settings.databaseUrl)
      throw new Error(`the ${name} scenario needs PostgreSQL (BENCH_DATABASE_URL=postgres://…)`);
  }
  const names = new Set(wanted.flatMap((name) => [againstOf(SCENARIOS[name]), name]));
  return Object.keys(SCENARIOS).filter((name) => names.has(name));
}
