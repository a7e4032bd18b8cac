// The stores of the read scenarios: SQLite files the api created and migrated, holding READ_ROWS
// plants (ids 1…READ_ROWS, "Fern", "bench"), or BIG_ROWS in TAGS tags for the filtered pages, each
// made once per invocation; every run (api or baseline, which opens the same table) starts from a
// copy of one.

import { copyFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { progress, TOKEN } from './session.mjs';
import { makeTempDir, spawnServer } from './system.mjs';
import { BIG_ROWS, PLANT_NAME, PLANT_TAG, READ_ROWS, TAGS } from './workload.mjs';

const templates = new Map();

/** A migrated store of `rows` plants (ids 1…rows, "Fern"; tag `bench`, or `t<id mod TAGS>` with `tags`). */
async function makeTemplate(settings, rows, tags) {
  const dir = makeTempDir(tags ? 'tagged-template' : 'read-template', settings.tmpBase);
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
    for (let id = 1; id <= rows; id++) insert.run(id, PLANT_NAME, tags ? `t${id % TAGS}` : PLANT_TAG);
  })();
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  progress(`[compare] ${tags ? 'tagged' : 'read'} store: ${rows} plants`);
  return { dir, files: readdirSync(dir).filter((f) => f.startsWith('plants.db')) };
}

async function copyTemplate(settings, dir, rows, tags) {
  const key = `${rows}:${tags}`;
  if (!templates.has(key)) templates.set(key, makeTemplate(settings, rows, tags));
  const { dir: from, files } = await templates.get(key);
  for (const file of files) copyFileSync(join(from, file), join(dir, file));
  return { idModulo: rows, countRows: null };
}

/** Copies the read store into `dir` (as `plants.db`); the load's ids cycle through its plants. */
export const readStore = (settings, dir) => copyTemplate(settings, dir, READ_ROWS, false);

/** The same with BIG_ROWS plants in TAGS tags, for the filtered pages (made once per invocation too). */
export const taggedStore = (settings, dir) => copyTemplate(settings, dir, BIG_ROWS, true);
