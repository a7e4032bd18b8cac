// `import`: the `plants` command's bulk import and export beside compare's batched tRPC creates,
// BENCH_RUNS rounds, the two steps of a round in rotated order:
// - `trpc-batch`, the compare scenario as it is: its creates/s;
// - a fresh api started the same way (so with the rate limit raised, as an operator loading a
//   catalog raises it), then the real CLI process on the load core: `plants import <file> --json` of
//   BENCH_IMPORT_PLANTS plants, then `plants export > <file>`. Checked: both exit 0, the import counts
//   every plant created, the store holds exactly them and the export is them, line for line, in id order.
// A round's ratio is the import's plants/s ÷ that round's batched creates/s.
import { closeSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'lossless-json';
import { describeRun, interleave, runScenario, startServer } from '../lib/measure.mjs';
import { TOKEN, warn } from '../lib/session.mjs';
import { atLeast, fmtInt, fmtRatio, median, ratio, round1, round2, table, target } from '../lib/stats.mjs';
import { sqliteRows } from '../lib/stores.mjs';
import { makeTempDir, processStats, removeTempDir, runCli } from '../lib/system.mjs';
import { restBody } from '../lib/workload.mjs';

/** The import at least this × the batched creates/s; the export of 100,000 plants within this (s). */
const IMPORT_RATIO = 0.8;
const EXPORT_SECONDS = 5;

/** A fresh api; the CLI imports `file`, then exports the store to a file that must equal `expected`. */
async function importRun(settings, file, expected) {
  const n = settings.importPlants;
  const dir = makeTempDir('import', settings.tmpBase);
  const server = await startServer(settings, 'api', { dir });
  try {
    await server.ready();
    const env = { PLANTS_URL: server.url, PLANTS_TOKEN: TOKEN };
    const timeoutMs = 120_000 + n * 5;
    const cpuBefore = processStats(server.pid).cpuSeconds;
    const imported = await runCli(['import', file, '--json'], { env, timeoutMs });
    const apiCpu = processStats(server.pid).cpuSeconds - cpuBefore;
    const summary = imported.code === 0 ? parse(imported.stdout.trim()) : {};
    if (
      Number(summary.created) !== n ||
      Number(summary.present) !== 0 ||
      summary.invalid?.length ||
      summary.failed?.length
    )
      throw new Error(
        `plants import exited ${imported.code}: ${(imported.stdout + imported.stderr).slice(0, 300)}`,
      );
    const exportFile = join(dir, 'export.ndjson');
    const fd = openSync(exportFile, 'w');
    const exported = await runCli(['export'], { env, stdout: fd, timeoutMs }).finally(() => closeSync(fd));
    if (exported.code !== 0) throw new Error(`plants export exited ${exported.code}: ${exported.stderr}`);
    if (readFileSync(exportFile, 'utf8') !== expected)
      throw new Error('plants export did not write the imported plants in id order');
    await server.stop();
    const stored = sqliteRows(join(dir, 'plants.db'));
    if (stored !== n) throw new Error(`the store holds ${stored} plants after importing ${n}`);
    return {
      importSeconds: round2(imported.seconds),
      plantsPerSec: round1(n / imported.seconds),
      cliCpuUsPerPlant: round1((imported.cpuSeconds * 1e6) / n),
      apiCpuUsPerPlant: round1((apiCpu * 1e6) / n),
      exportSeconds: round2(exported.seconds),
    };
  } finally {
    await server.stop();
    removeTempDir(dir);
  }
}

async function run(settings) {
  const work = makeTempDir('import-catalog', settings.tmpBase);
  try {
    const file = join(work, 'catalog.ndjson');
    const lines = Array.from({ length: settings.importPlants }, (_, i) => `${restBody(i + 1)}\n`).join('');
    writeFileSync(file, lines);
    const describe = (r) =>
      r.plantsPerSec ? `${fmtInt(r.plantsPerSec)} plants/s, export ${r.exportSeconds} s` : describeRun(r);
    const runs = await interleave(
      settings,
      'import',
      ['trpc-batch', 'import'],
      (step, round) =>
        step === 'import' ? importRun(settings, file, lines) : runScenario(settings, step, { round }),
      describe,
    );
    const rounds = runs.import.map((r, i) => {
      const batch = runs['trpc-batch'][i];
      const error = r.error ?? batch.error;
      return error
        ? { error }
        : {
            ...r,
            batchCreatesPerSec: round1(batch.donePerSec),
            ratio: round2(ratio(r.plantsPerSec, batch.donePerSec)),
          };
    });
    const ok = rounds.filter((r) => !r.error);
    for (const r of rounds) if (r.error) warn(`import: ${r.error}`);
    const med = (key) => median(ok.map((r) => r[key]));
    return {
      plants: settings.importPlants,
      rounds,
      failed: rounds.length - ok.length,
      ratio: med('ratio'),
      plantsPerSec: med('plantsPerSec'),
      batchCreatesPerSec: med('batchCreatesPerSec'),
      exportSeconds: med('exportSeconds'),
    };
  } finally {
    removeTempDir(work);
  }
}

const render = (im) => [
  `## Bulk import and export: \`plants import\` and \`plants export\` of ${fmtInt(im.plants)} plants`,
  '',
  table(
    [
      'round',
      'batched tRPC creates/s',
      'import s',
      'import plants/s',
      'import ÷ batched',
      'CLI CPU µs/plant',
      'api CPU µs/plant',
      'export s',
    ],
    im.rounds.map((r, i) =>
      r.error
        ? [i + 1, r.error.slice(0, 160)]
        : [
            i + 1,
            fmtInt(r.batchCreatesPerSec),
            r.importSeconds,
            fmtInt(r.plantsPerSec),
            fmtRatio(r.ratio),
            r.cliCpuUsPerPlant,
            r.apiCpuUsPerPlant,
            r.exportSeconds,
          ],
    ),
  ),
];

const targets = (im) => [
  atLeast('`plants import`, × the batched tRPC creates/s (median of the rounds)', im.ratio, IMPORT_RATIO),
  target(
    `\`plants export\` of 100,000 plants ≤ ${EXPORT_SECONDS} s`,
    `${im.exportSeconds} s for ${fmtInt(im.plants)}`,
    im.plants === 100_000 ? im.exportSeconds <= EXPORT_SECONDS : null,
  ),
  target(
    'Every import round: both commands exit 0, store and export hold exactly the plants (check)',
    `${im.failed} failed`,
    im.failed === 0,
  ),
];

export default { name: 'import', run, render, targets };
