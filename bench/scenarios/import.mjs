// `import`: the `plants` command's bulk import and export (issue 15, point 9) beside compare's tRPC
// batched scenario. BENCH_IMPORT_RUNS rounds, the two steps of a round in an order rotated like
// compare's (round 1: batched then import, round 2: import then batched, …):
// - `trpc-batch`: compare's scenario as it is (autocannon on the load core, BENCH_BATCH calls a
//   request, BENCH_CONNECTIONS connections, a fresh api and store): its creates/s;
// - `import`: a fresh api started the same way (so with the rate limit every bench server has,
//   RATE_LIMIT_MAX=1000000000, as an operator loading a catalog raises it), then the real CLI
//   process, `plants import <file>` of an NDJSON file of BENCH_IMPORT_PLANTS plants, then
//   `plants export > <file>`, each pinned to the load core as autocannon is. Checked: both exit 0,
//   the import's summary counts every plant created, the store holds exactly the N plants, the
//   export's file is the N plants, line for line, in id order.
// The ratio of a round is the import's plants/s ÷ that round's batched creates/s.

import { closeSync, createReadStream, openSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { parse } from 'lossless-json';
import { fmtCount, fmtInt, fmtPct, round1, round3 } from '../lib/format.mjs';
import { startServer } from '../lib/measure.mjs';
import { scanLog } from '../lib/server-log.mjs';
import { progress, TOKEN, warn } from '../lib/session.mjs';
import { sqliteRowCounter } from '../lib/sqlite.mjs';
import { median, ratio, rotate } from '../lib/stats.mjs';
import { describeRun, summarize } from '../lib/summary.mjs';
import { makeTempDir, processStats, removeTempDir, runCli, sampleMemory } from '../lib/system.mjs';
import { idText, restBody } from '../lib/workload.mjs';
import { SCENARIOS, scenarioRun } from './compare.mjs';

/**
 * The file to import: one `{"id":…,"name":"Fern","tag":"bench"}` a line (the plants the batched
 * scenario creates, with ids from the same BENCH_IDS sequence), and its plants as `export` must
 * write them (id order).
 */
function writeCatalog(settings, dir) {
  const ids = Array.from({ length: settings.importPlants }, (_, i) => BigInt(idText(settings.ids, i)));
  const file = join(dir, 'catalog.ndjson');
  writeFileSync(file, ids.map((id) => `${restBody(id)}\n`).join(''));
  const expected = ids.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)).map(restBody);
  return { file, expected };
}

/** A fresh api on a fresh directory; the CLI imports `catalog`, then exports the store to a file. */
async function importRun(settings, catalog) {
  const dir = makeTempDir('import', settings.tmpBase);
  try {
    const result = await importAndExport(settings, catalog, dir);
    result.stored = await sqliteRowCounter(join(dir, 'plants.db'))();
    const n = settings.importPlants;
    if (result.stored !== n) throw new Error(`the store holds ${result.stored} plants after importing ${n}`);
    return result;
  } finally {
    removeTempDir(dir);
  }
}

async function importAndExport(settings, catalog, dir) {
  const n = settings.importPlants;
  const server = await startServer(settings, 'api', { dir });
  let memory;
  try {
    await server.ready();
    const env = { PLANTS_URL: server.url, PLANTS_TOKEN: TOKEN };
    // Generous: a floor of 2 minutes, then 5 ms a plant (200 plants/s).
    const timeoutMs = 120_000 + n * 5;
    memory = sampleMemory(server.pid, 250);
    const cpuBefore = processStats(server.pid)?.cpuSeconds;
    const imported = await runCli(['import', catalog.file, '--json'], { env, timeoutMs });
    const serverCpu = processStats(server.pid)?.cpuSeconds - cpuBefore;
    if (imported.code !== 0)
      throw new Error(`plants import exited ${imported.code ?? imported.signal}: ${imported.stderr}`);
    checkSummary(imported.stdout, n);
    if (imported.stderr) warn(`import: plants import wrote to stderr: ${imported.stderr.slice(0, 300)}`);

    const file = join(dir, 'export.ndjson');
    const fd = openSync(file, 'w');
    let exported;
    try {
      exported = await runCli(['export'], { env, stdout: fd, timeoutMs });
    } finally {
      closeSync(fd);
    }
    if (exported.code !== 0)
      throw new Error(`plants export exited ${exported.code ?? exported.signal}: ${exported.stderr}`);
    const lines = await checkExport(file, catalog.expected);
    return {
      import: {
        seconds: round3(imported.seconds),
        plantsPerSec: round1(n / imported.seconds),
        cliCpuUsPerPlant: perPlantUs(imported.cpuSeconds, n),
        serverCpuUsPerPlant: perPlantUs(serverCpu, n),
        cliCpu: busy(imported.cpuSeconds, imported.seconds),
        serverCpu: busy(serverCpu, imported.seconds),
      },
      export: { seconds: round3(exported.seconds), lines },
      serverPeakRssMb: round1(memory.stop().peakKb / 1024),
    };
  } finally {
    memory?.stop();
    const exit = await server.stop();
    if (exit.code !== 0)
      warn(`import: the api did not exit cleanly on SIGTERM (${exit.code ?? exit.signal})`);
    if (server.logFile) noteLogProblems(await scanLog(server.logFile));
  }
}

function perPlantUs(cpuSeconds, n) {
  return Number.isFinite(cpuSeconds) ? round1((cpuSeconds * 1e6) / n) : null;
}

function busy(cpuSeconds, seconds) {
  return Number.isFinite(cpuSeconds) ? round3(cpuSeconds / seconds) : null;
}

/** The import's `--json` summary must count every plant created, and nothing else. */
function checkSummary(stdout, n) {
  let summary;
  try {
    summary = parse(stdout.trim());
  } catch {
    throw new Error(`plants import --json printed no JSON summary: ${stdout.slice(0, 300)}`);
  }
  const { created, present, invalid, failed } = summary;
  if (Number(created) !== n || Number(present) !== 0 || invalid?.length !== 0 || failed?.length !== 0)
    throw new Error(`plants import of ${n} plants summed up: ${stdout.trim().slice(0, 300)}`);
}

/** The export must be the imported plants, one a line, in id order; resolves with its line count. */
async function checkExport(file, expected) {
  let lines = 0;
  for await (const line of createInterface({ input: createReadStream(file) })) {
    if (line !== expected[lines])
      throw new Error(
        `plants export line ${lines + 1} is ${line.slice(0, 120)}, expected ${expected[lines]}`,
      );
    lines++;
  }
  if (lines !== expected.length)
    throw new Error(`plants export wrote ${lines} lines, expected ${expected.length}`);
  return lines;
}

function noteLogProblems(log) {
  const problems = Object.entries(log.levels)
    .filter(([level]) => Number(level) >= 40)
    .reduce((n, [, c]) => n + c, 0);
  if (problems > 0)
    warn(`import: the api logged ${problems} warning/error lines, first: ${log.firstProblem}`);
  const non200 = Object.entries(log.postStatuses).filter(([status]) => status !== '200');
  if (non200.length > 0)
    warn(`import: the api answered POSTs other than 200: ${non200.map(([s, c]) => `${s}×${c}`).join(', ')}`);
}

function describeImport({ import: i, export: e }) {
  return (
    `import ${i.seconds.toFixed(2)} s = ${fmtInt(i.plantsPerSec)} plants/s ` +
    `(CLI ${i.cliCpuUsPerPlant ?? 'n/a'} µs, api ${i.serverCpuUsPerPlant ?? 'n/a'} µs CPU a plant; ` +
    `CLI CPU ${fmtPct(i.cliCpu)}, api CPU ${fmtPct(i.serverCpu)}), export ${e.seconds.toFixed(2)} s`
  );
}

export async function importBench(settings) {
  const n = settings.importPlants;
  const work = makeTempDir('import-catalog', settings.tmpBase);
  try {
    const catalog = writeCatalog(settings, work);
    progress(`[import] ${fmtInt(n)} plants in ${catalog.file}`);
    const rounds = [];
    const batchRuns = [];
    for (let round = 0; round < settings.importRuns; round++) {
      const order = rotate(['trpc-batch', 'import'], round);
      const entry = { round: round + 1, order };
      for (const step of order) {
        const label = `[import ${round + 1}/${settings.importRuns}] ${step}`;
        progress(`${label} …`);
        try {
          if (step === 'trpc-batch') {
            const run = await scenarioRun(settings, SCENARIOS['trpc-batch'], { round });
            batchRuns.push(run);
            entry.batchCreatesPerSec = round1(run.createsPerSec);
            // The api's CPU a create under the batched load, beside its CPU a plant under the import.
            entry.batchServerCpuUsPerCreate = perPlantUs(run.serverCpu, run.createsPerSec);
            progress(`${label}: ${describeRun(run)}`);
          } else {
            Object.assign(entry, await importRun(settings, catalog));
            progress(`${label}: ${describeImport(entry)}`);
          }
        } catch (error) {
          entry.errors = [...(entry.errors ?? []), `${step}: ${error.message}`];
          progress(`${label}: FAILED: ${error.message}`);
          warn(`import: round ${round + 1}, ${step} failed: ${error.message}`);
        }
      }
      entry.ratio = entry.errors ? null : round3(ratio(entry.import?.plantsPerSec, entry.batchCreatesPerSec));
      rounds.push(entry);
    }
    summarize(`import (tRPC batched, ${fmtCount(n)})`, batchRuns);
    return { plants: n, runs: settings.importRuns, rounds, summary: summarizeRounds(rounds) };
  } finally {
    removeTempDir(work);
  }
}

/** Medians over the rounds that passed every check; the ratio's is the median of the rounds' ratios. */
function summarizeRounds(rounds) {
  const ok = rounds.filter((r) => !r.errors);
  const ratios = ok.map((r) => r.ratio);
  const exports = ok.map((r) => r.export.seconds);
  const batch = median(ok.map((r) => r.batchCreatesPerSec));
  const imports = median(ok.map((r) => r.import.plantsPerSec));
  return {
    rounds: ok.length,
    failed: rounds.length - ok.length,
    batchCreatesPerSec: round1(batch),
    importPlantsPerSec: round1(imports),
    importSeconds: round3(median(ok.map((r) => r.import.seconds))),
    ratio: round3(median(ratios)),
    ratioMin: ratios.length ? Math.min(...ratios) : null,
    ratioMax: ratios.length ? Math.max(...ratios) : null,
    ratioOfMedians: round3(ratio(imports, batch)),
    exportSeconds: round3(median(exports)),
    exportMin: exports.length ? Math.min(...exports) : null,
    exportMax: exports.length ? Math.max(...exports) : null,
    cliCpuUsPerPlant: round1(median(ok.map((r) => r.import.cliCpuUsPerPlant))),
    serverCpuUsPerPlant: round1(median(ok.map((r) => r.import.serverCpuUsPerPlant))),
    batchServerCpuUsPerCreate: round1(median(ok.map((r) => r.batchServerCpuUsPerCreate))),
  };
}
