// The store of the read scenarios: an SQLite file the api created and migrated, holding READ_ROWS
// plants (ids 1…READ_ROWS, "Fern", "bench"), made once per invocation; every run (api or
// baseline, which opens the same table) starts from a copy of it.

import { copyFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { progress, TOKEN } from './session.mjs';
import { makeTempDir, spawnServer } from './system.mjs';
import { PLANT_NAME, PLANT_TAG, READ_ROWS } from './workload.mjs';

let template;

async function makeTemplate(settings) {
  const dir = makeTempDir('read-template', settings.tmpBase);
  const server = await spawnServer('api', { dir, token: TOKEN, logToFile: false });
  try {
    await server.ready();
  } finally {
    await server.stop();
  }
  const db = new Database(join(dir, 'plants.db'));
  db.pragma('journal_mode = WAL');
  const insert = db.prepare('INSERT INTO plants (id, name, tag) VALUES (?, ?, ?)');
  db.transaction(() => {
    for (let id = 1; id <= READ_ROWS; id++) insert.run(id, PLANT_NAME, PLANT_TAG);
  })();
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  progress(`[compare] read store: ${READ_ROWS} plants`);
  return { dir, files: readdirSync(dir).filter((f) => f.startsWith('plants.db')) };
}

/** Copies the read store into `dir` (as `plants.db`); the load's ids cycle through its plants. */
export async function readStore(settings, dir) {
  template ??= makeTemplate(settings);
  const { dir: from, files } = await template;
  for (const file of files) copyFileSync(join(from, file), join(dir, file));
  return { idModulo: READ_ROWS, countRows: null };
}
