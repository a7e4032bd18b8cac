// One measured run, the way every command measures: start a server on a fresh store, check one
// request, warm up, measure, stop, then inspect (peak RSS, CPU a request, the rows the store holds,
// what the api logged). Runs interleaved, and the medians of a scenario's runs.
import { createReadStream } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { SCENARIOS } from './scenarios.mjs';
import { progress, TOKEN, warn } from './session.mjs';
import { fmtInt, fmtMs, fmtPct, max, median, rotate, round1, round2, sum } from './stats.mjs';
import { sqliteRows } from './stores.mjs';
import {
  makeTempDir,
  processStats,
  removeTempDir,
  runLoad,
  sampleMemory,
  send,
  spawnServer,
} from './system.mjs';
import { buildRequest, createsPerRequest, idText, LIST_LIMIT, PLANT_NAME } from './workload.mjs';

/**
 * Runs `runOne(key, round)` for every key, BENCH_RUNS rounds, each round in a rotated order (round 1
 * A B C, round 2 B C A, …) so that a machine's drift weighs on every key alike. Resolves with each
 * key's results, a failed run as `{ error }`; `describe(result)` is its progress line.
 */
export async function interleave(settings, label, keys, runOne, describe = describeRun) {
  const runs = Object.fromEntries(keys.map((key) => [key, []]));
  for (let round = 0; round < settings.runs; round++) {
    for (const key of rotate(keys, round)) {
      const tag = `[${label} ${round + 1}/${settings.runs}] ${key}`;
      try {
        runs[key].push(await runOne(key, round));
        progress(`${tag}: ${describe(runs[key].at(-1))}`);
      } catch (error) {
        runs[key].push({ error: error.message });
        progress(`${tag}: FAILED: ${error.message}`);
      }
    }
  }
  return runs;
}

/** A server under test with this invocation's token (and, for `profile`, the api under --cpu-prof). */
export function startServer(settings, kind, options = {}) {
  const flags =
    kind === 'api' && settings.profileDir ? ['--cpu-prof', `--cpu-prof-dir=${settings.profileDir}`] : [];
  return spawnServer(kind, { ...options, flags, token: TOKEN });
}

/**
 * One run of the compare scenario `name` on a fresh directory (and store, which the scenario's
 * `open` may provide with the api's environment, what to read after the load and `close`).
 */
export async function runScenario(settings, name, { round = 0, duration, warmup, samples } = {}) {
  const scenario = SCENARIOS[name];
  const dir = makeTempDir(name, settings.tmpBase);
  let opened = {};
  try {
    opened = (await scenario.open?.(settings, dir, round)) ?? {};
    return await measureRun(settings, {
      kind: scenario.server ?? 'api',
      load: scenario.load,
      dir,
      idStart: opened.idStart ?? 0,
      duration,
      warmup,
      samples,
      ...opened,
    });
  } finally {
    await opened.close?.();
    removeTempDir(dir);
  }
}

/**
 * One run of `load` against a fresh `kind` server (the api by default) on `dir` (or `databaseUrl`):
 * ids from `idStart` on (`idMode` seq or scattered; with `idModulo` they cycle), `warmup` then
 * `duration` seconds (the settings' by default). `countRows` (default: the SQLite file's plants;
 * null: none) counts what the store holds after; `afterLoad(result)` runs once the load stops, its
 * fields added to the run; `samples` keeps the RSS of every second.
 */
export async function measureRun(settings, run) {
  const { kind = 'api', load, dir, idMode = 'seq', idStart, afterLoad } = run;
  const server = await startServer(settings, kind, { dir, databaseUrl: run.databaseUrl, env: run.env });
  try {
    await server.ready();
    const perRequest = createsPerRequest(load, settings.batch);
    await preflight(
      server.url,
      load,
      Array.from({ length: perRequest }, (_, i) => idText(idMode, idStart + i)),
      run.bearer,
    );
    const memory = sampleMemory(server.pid, run.samples ? 1000 : 250);
    const result = await loadServer(settings, server, load, { ...run, idStart: idStart + perRequest });
    const { samples, peakMb } = memory.stop();
    const extra = afterLoad ? await afterLoad(result) : {};
    const exit = await server.stop();
    const countRows = run.countRows === undefined ? () => sqliteRows(join(dir, 'plants.db')) : run.countRows;
    const creates = load === 'rest' || load.startsWith('trpc');
    return {
      ...result,
      peakRssMb: round1(peakMb),
      rssSamples: run.samples ? samples.map((s) => ({ t: Math.round(s.t), mb: round1(s.mb) })) : undefined,
      serverExit: kind === 'api' ? exit : undefined,
      logProblems: server.logFile ? await logProblems(server.logFile) : undefined,
      // The creates acknowledged (the check request, the warm-up's and the measured ones), and stored.
      acked: creates ? perRequest + (result.warmup?.done ?? 0) + result.done : undefined,
      stored: creates && countRows ? await countRows() : undefined,
      ...extra,
    };
  } finally {
    await server.stop();
  }
}

/**
 * `load` on a running server from the load worker: `warmup` then `duration` seconds (the settings'
 * by default), ids from `idStart`; with the server's share of a core and CPU µs a request over the
 * measured phase.
 */
export async function loadServer(
  settings,
  server,
  load,
  { idMode = 'seq', idStart = 0, idModulo, ...run } = {},
) {
  let cpuStart;
  const result = await runLoad(
    {
      url: server.url,
      // A scenario's own bearer token (get-jwt's JWT), else this invocation's opaque one.
      token: run.bearer ?? TOKEN,
      load,
      connections: settings.connections,
      duration: run.duration ?? settings.duration,
      warmup: run.warmup ?? settings.warmup,
      idMode,
      idStart,
      idModulo,
      batch: settings.batch,
    },
    {
      onMeasuring: () => {
        cpuStart = processStats(server.pid)?.cpuSeconds;
      },
    },
  );
  const cpu = processStats(server.pid)?.cpuSeconds - cpuStart;
  const known = Number.isFinite(cpu) && result.responses > 0;
  return {
    ...result,
    serverCpu: known ? cpu / result.seconds : null,
    serverCpuUs: known ? round1((cpu * 1e6) / result.responses) : null,
  };
}

/**
 * Sends one request of the load and checks its answer: the expected status, and for a 200 a body
 * that holds the plants asked for (for a tag page, of that tag only).
 */
async function preflight(url, load, ids, bearer = TOKEN) {
  const request = buildRequest(load, ids);
  const type = request.body ? { 'content-type': 'application/json' } : {};
  const headers = { authorization: `Bearer ${bearer}`, ...type, ...request.headers };
  const { status, text } = await send(url, { ...request, headers });
  const plants = text.split(`"name":"${PLANT_NAME}`).length - 1;
  const expected = load.startsWith('list') ? LIST_LIMIT : ids.length;
  const ok =
    load === 'get-304'
      ? status === 304 && text === ''
      : status === 200 && plants === expected && (load !== 'list-tag' || !/"tag":"(?!t3")/.test(text));
  if (!ok) throw new Error(`check request ${load} ${request.path}: HTTP ${status}: ${text.slice(0, 300)}`);
}

/** Lines of warning level or above in the api's log, and the first one. */
async function logProblems(file) {
  let count = 0;
  let first;
  for await (const line of createInterface({ input: createReadStream(file) })) {
    if (line.startsWith('{"level":30,') || line === '') continue;
    const level = /^\{"level":(\d+)/.exec(line)?.[1];
    if (level !== undefined && Number(level) < 40) continue;
    count++;
    first ??= line.slice(0, 300);
  }
  return count === 0 ? undefined : { count, first };
}

export function describeRun(run) {
  const done = run.donePerSec !== run.reqPerSec ? `, ${fmtInt(run.donePerSec)} creates/s` : '';
  return (
    `${fmtInt(run.reqPerSec)} req/s${done}, p50 ${fmtMs(run.latency.p50)} p99 ${fmtMs(run.latency.p99)} ms, ` +
    `${run.notOk} not ok, ${run.errors} errors, peak RSS ${run.peakRssMb} MiB, server CPU ${fmtPct(run.serverCpu)}, ` +
    `load CPU ${fmtPct(run.loadCpu)}`
  );
}

/** Medians over a scenario's runs that did not fail, and a note for anything that looked wrong. */
export function summarize(name, runs) {
  const ok = runs.filter((run) => !run.error);
  for (const run of runs) if (run.error) warn(`${name}: a run failed: ${run.error}`);
  if (ok.length === 0) return { runs: 0, failed: runs.length, error: runs[0]?.error ?? 'no runs' };
  const loadCpu = median(ok.map((run) => run.loadCpu));
  if (loadCpu > 0.9)
    warn(`${name}: the load generator used ${fmtPct(loadCpu)} of its core: it may be the bound`);
  for (const run of ok) {
    if (run.stored < run.acked)
      warn(`${name}: ${run.acked - run.stored} acknowledged creates are not in the store`);
    if (run.logProblems)
      warn(`${name}: the api logged ${run.logProblems.count} warnings: ${run.logProblems.first}`);
    if (run.serverExit && run.serverExit.code !== 0)
      warn(`${name}: the api did not exit 0 on SIGTERM (${run.serverExit.code ?? run.serverExit.signal})`);
    if (run.warmup && run.warmup.notOk + run.warmup.errors > 0)
      warn(`${name}: the warm-up had ${run.warmup.notOk} answers not ok and ${run.warmup.errors} errors`);
  }
  const checked = ok.filter((run) => run.stored !== undefined && run.stored !== null);
  return {
    runs: ok.length,
    failed: runs.length - ok.length,
    reqPerSec: round1(median(ok.map((run) => run.reqPerSec))),
    donePerSec: round1(median(ok.map((run) => run.donePerSec))),
    p50: round2(median(ok.map((run) => run.latency.p50))),
    p99: round2(median(ok.map((run) => run.latency.p99))),
    notOk: sum(ok.map((run) => run.notOk)),
    errors: sum(ok.map((run) => run.errors)),
    peakRssMb: max(ok.map((run) => run.peakRssMb)),
    serverCpuUs: round1(median(ok.map((run) => run.serverCpuUs))),
    loadCpu,
    perRun: ok.map((run) => Math.round(run.donePerSec)),
    lost: checked.length ? sum(checked.map((run) => Math.max(0, run.acked - run.stored))) : null,
  };
}
