import { chmodSync, closeSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import { bind, type Params, type Result, type Statement } from '../sql.ts';
import { Database } from './driver.ts';

export type Connection = BetterSqlite3.Database;

/** Opens the SQLite file in WAL mode, its directory 0700 and files 0600 first (`-wal` and `-shm` follow). */
export function openDatabase(path: string, synchronous: 'NORMAL' | 'FULL'): Connection {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  closeSync(openSync(path, 'a', 0o600));
  for (const file of [path, `${path}-wal`, `${path}-shm`]) {
    try {
      chmodSync(file, 0o600);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
  }
  const db = new Database(path);
  db.exec(`PRAGMA journal_mode = WAL; PRAGMA synchronous = ${synchronous}; PRAGMA busy_timeout = 5000;
    PRAGMA cache_size = -${CACHE_KIB}`);
  return db;
}

/**
 * SQLite's page cache, in KiB (its default: 2,000): enough for the inner pages of the plants table and
 * its indexes at 10,000,000 plants, so a read by id or an update reads from the file only the leaves it
 * needs. Memory it may take, not memory it takes: a small store uses what it holds.
 */
export const CACHE_KIB = 32 * 1024;

/** Runs shared statements on `db`, each prepared once; `{now}` is `now` (default: the call's time). */
export function executor(db: Connection) {
  const prepared = new Map<Statement, ReturnType<typeof prepare>>();
  return <R = unknown>(statement: Statement, params: Params = {}, now?: number): Result<R> => {
    const entry = prepared.get(statement) ?? prepared.set(statement, prepare(db, statement)).get(statement)!;
    const values = bind(statement.sqlite, params, now ?? Date.now());
    if (!entry.row) return { rows: [], changes: entry.run.run(...values).changes };
    const rows = (entry.run.all(...values) as unknown[][]).map(entry.row) as R[];
    return { rows, changes: rows.length };
  };
}

// A reader's rows come as arrays, made objects by a function compiled for its columns: one shape, cheaper.
function prepare(db: Connection, { sqlite }: Statement) {
  const run = db.prepare(sqlite.text);
  if (!run.reader) return { run };
  return { run: run.raw(true), row: rowBuilder(run.columns().map(({ name }) => name)) };
}

/**
 * The function that makes a raw row (an array) an object of these columns, by name. better-sqlite3's
 * own row objects took twice as long to make a 100-plant page's rows (docs/architecture.md, "Going
 * around a library"); test/in-process/sqlite-row-reader.test.ts fails, naming that rule, if `raw()`
 * or `columns()` stop giving what its objects hold.
 */
export function rowBuilder<R>(columns: readonly string[]): (values: unknown[]) => R {
  const fields = columns.map((name, i) => `${JSON.stringify(name)}: v[${i}]`);
  return new Function('v', `return { ${fields.join(', ')} };`) as (values: unknown[]) => R;
}
