// The SQLite side of the bare baseline (bench/baseline.mjs), which the Koa floor
// (bench/koa-floor.mjs) shares so that the two differ only in the HTTP framework: WAL with
// synchronous=NORMAL (commits not fsync'd before the answer), prepared statements with exact
// int64 ids, and a JSON writer for the one row shape.
import Database from 'better-sqlite3';
import { MAX, MIN } from './baseline-http.mjs';

export function openStore(file) {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec('CREATE TABLE IF NOT EXISTS plants (id INTEGER PRIMARY KEY, name TEXT NOT NULL, tag TEXT)');
  return {
    insert: db.prepare('INSERT INTO plants (id, name, tag) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING'),
    get: db.prepare('SELECT id, name, tag FROM plants WHERE id = ?').safeIntegers(true),
    list: db.prepare('SELECT id, name, tag FROM plants ORDER BY id LIMIT ?').safeIntegers(true),
    rename: db.prepare('UPDATE plants SET name = ? WHERE id = ? RETURNING id, name, tag').safeIntegers(true),
  };
}

export function plantJson(row) {
  const tag = row.tag === null ? '' : `,"tag":${JSON.stringify(row.tag)}`;
  return `{"id":${row.id},"name":${JSON.stringify(row.name)}${tag}}`;
}

/** The id of `/plants/<id>` as a BigInt, or `{ status, message }` when the path names none. */
export function idOfPath(pathname) {
  const id = pathname.slice('/plants/'.length);
  if (!pathname.startsWith('/plants/') || !INT.test(id)) return { status: 404, message: 'Not found.' };
  const value = BigInt(id);
  if (value < MIN || value > MAX) return { status: 400, message: 'Bad id.' };
  return { id: value };
}

const INT = /^-?\d{1,19}$/;
