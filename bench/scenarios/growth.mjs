// `growth`: REST creates with N plants already stored (BENCH_GROWTH_SIZES), SQLite. For each size
// the api creates and migrates a file, is stopped, and the file is filled in one transaction; every
// run starts from a copy of that file. Sizes run interleaved, BENCH_RUNS rounds.

import { copyFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { fmtInt, round2 } from '../lib/format.mjs';
import { measureRun } from '../lib/measure.mjs';
import { progress, TOKEN } from '../lib/session.mjs';
import { sqliteRowCounter } from '../lib/sqlite.mjs';
import { ratio, rotate } from '../lib/stats.mjs';
import { describeRun, stripRuns, summarize } from '../lib/summary.mjs';
import { makeTempDir, removeTempDir, spawnServer } from '../lib/system.mjs';
import { PLANT_NAME, scatter } from '../lib/workload.mjs';

async function prepareGrowthTemplate(settings, size) {
  const dir = makeTempDir(`growth-template-${size}`, settings.tmpBase);
  const file = join(dir, 'plants.db');
  // Let the api create and migrate the file, as it would in production.
  const server = await spawnServer('api', { dir, token: TOKEN, logToFile: false });
  try {
    await server.ready();
  } finally {
    await server.stop();
  }
  if (size > 0) {
    const started = performance.now();
    const db = new Database(file);
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = OFF');
    db.pragma('cache_size = -262144');
    const insert = db.prepare('INSERT INTO plants (id, name, tag) VALUES (?, ?, ?)');
    let ids;
    if (settings.growthIds === 'seq') {
      ids = { length: size, at: (i) => BigInt(i + 1) };
    } else {
      // Sorted, so the fill is fast; the load then inserts scattered ids all over the tree.
      const sorted = new BigInt64Array(size);
      for (let i = 0; i < size; i++) sorted[i] = scatter(i);
      sorted.sort();
      ids = { length: size, at: (i) => sorted[i] };
    }
    db.transaction(() => {
      for (let i = 0; i < ids.length; i++) insert.run(ids.at(i), PLANT_NAME, 'prefill');
    })();
    db.pragma('wal_checkpoint(TRUNCATE)');
    db.close();
    progress(
      `[growth] pre-filled ${fmtInt(size)} plants in ${((performance.now() - started) / 1000).toFixed(1)} s`,
    );
  }
  return { dir, files: readdirSync(dir).filter((f) => f.startsWith('plants.db')) };
}

export async function growth(settings) {
  const sizes = settings.growthSizes;
  const templates = {};
  try {
    for (const size of sizes) templates[size] = await prepareGrowthTemplate(settings, size);
    const runs = Object.fromEntries(sizes.map((size) => [size, []]));
    for (let round = 0; round < settings.runs; round++) {
      for (const size of rotate(sizes, round)) {
        const label = `[growth ${round + 1}/${settings.runs}] ${fmtInt(size)} stored`;
        progress(`${label} …`);
        const dir = makeTempDir(`growth-${size}`, settings.tmpBase);
        try {
          for (const file of templates[size].files)
            copyFileSync(join(templates[size].dir, file), join(dir, file));
          const run = await measureRun(settings, {
            kind: 'api',
            load: 'rest',
            dir,
            idMode: settings.growthIds,
            idStart: size,
            duration: settings.duration,
            warmup: settings.warmup,
            countRows: sqliteRowCounter(join(dir, 'plants.db'), size),
          });
          runs[size].push(run);
          progress(`${label}: ${describeRun(run)}`);
        } catch (error) {
          runs[size].push({ error: error.message });
          progress(`${label}: FAILED: ${error.message}`);
        } finally {
          removeTempDir(dir);
        }
      }
    }
    const summary = {};
    for (const size of sizes) summary[size] = summarize(`growth ${fmtInt(size)}`, runs[size]);
    const first = summary[sizes[0]];
    for (const size of sizes) {
      summary[size].vsFirst = round2(ratio(summary[size].createsPerSec, first.createsPerSec));
      summary[size].p99VsFirst = round2(ratio(summary[size].p99, first.p99));
    }
    return { sizes, idMode: settings.growthIds, summary, runs: stripRuns(runs) };
  } finally {
    for (const template of Object.values(templates)) removeTempDir(template.dir);
  }
}
