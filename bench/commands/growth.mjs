// `growth`: REST creates with N plants already stored (BENCH_GROWTH_SIZES), SQLite. For each size a
// store the api migrated is filled once (ids scattered over the int64 range, as are the load's, so
// that creates land all over the B-tree); every run starts from a copy. Sizes interleaved, BENCH_RUNS
// rounds.
import { join } from 'node:path';
import { interleave, measureRun, summarize } from '../lib/measure.mjs';
import { atLeast, fmtCount, fmtInt, fmtMs, fmtRatio, ratio, round2, table, target } from '../lib/stats.mjs';
import { copyStore, makeStore, sqliteRows } from '../lib/stores.mjs';
import { makeTempDir, removeTempDir } from '../lib/system.mjs';
import { PLANT_NAME, scatter } from '../lib/workload.mjs';

async function run(settings) {
  const sizes = settings.growthSizes;
  const templates = {};
  let runs;
  try {
    for (const size of sizes) {
      // Sorted, so that the fill appends; the load then inserts all over the tree.
      const ids = new BigInt64Array(size).map((_, i) => scatter(i)).sort();
      templates[size] = await makeStore(settings, `growth-${fmtCount(size)}`, size, (i) => [
        ids[i],
        PLANT_NAME,
        'prefill',
      ]);
    }
    runs = await interleave(settings, 'growth', sizes, async (size) => {
      const dir = makeTempDir(`growth-${size}`, settings.tmpBase);
      try {
        copyStore(templates[size], dir);
        const countRows = () => sqliteRows(join(dir, 'plants.db'), size);
        return await measureRun(settings, {
          load: 'rest',
          dir,
          idMode: 'scattered',
          idStart: size,
          countRows,
        });
      } finally {
        removeTempDir(dir);
      }
    });
  } finally {
    for (const template of Object.values(templates)) removeTempDir(template.dir);
  }
  const summary = Object.fromEntries(
    sizes.map((size) => [size, summarize(`growth ${fmtCount(size)}`, runs[size])]),
  );
  for (const s of Object.values(summary))
    s.vsFirst = round2(ratio(s.donePerSec, summary[sizes[0]].donePerSec));
  return { sizes, summary };
}

const render = ({ sizes, summary }, settings) => [
  `## Growth: REST creates with plants already stored (SQLite), median of ${settings.runs} interleaved run(s)`,
  '',
  table(
    [
      'stored',
      'creates/s',
      `× at ${fmtCount(sizes[0])}`,
      'p50 ms',
      'p99 ms',
      'peak RSS MiB',
      'server CPU µs/req',
      'per run',
    ],
    sizes.map((size) => {
      const s = summary[size];
      return s.runs === 0
        ? [fmtCount(size), 'failed', '', '', '', '', '', s.error]
        : [
            fmtCount(size),
            fmtInt(s.donePerSec),
            fmtRatio(s.vsFirst),
            fmtMs(s.p50),
            fmtMs(s.p99),
            s.peakRssMb,
            s.serverCpuUs,
            s.perRun.map(fmtInt).join(' · '),
          ];
    }),
  ),
];

function targets({ sizes, summary }) {
  const last = summary[sizes.at(-1)];
  const lost = Object.values(summary).reduce(
    (n, s) => n + (s.runs === 0 ? 1 : s.notOk + s.errors + s.lost),
    0,
  );
  return [
    atLeast(`Creates with ${fmtCount(sizes.at(-1))} stored, × with ${fmtCount(sizes[0])}`, last.vsFirst, 0.8),
    target('Every growth run answered and stored every create (check)', String(lost), lost === 0),
  ];
}

export default { name: 'growth', run, render, targets };
