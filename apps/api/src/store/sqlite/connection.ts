import { chmodSync, closeSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { bind, type Params, type Result, type Statement } from '../sql.ts';

export type Connection = Database.Database;

/**
 * Opens the SQLite file at `path` in WAL mode, its files made private to the service's user first:
 * the directory is created 0700 when missing, the database file is created (empty: a valid new
 * database) or kept at 0600, and existing `-wal` and `-shm` files too. SQLite creates its `-wal`
 * and `-shm` files with the database file's permissions, so they follow.
 */
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
  db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${synchronous}`);
  db.pragma('busy_timeout = 5000');
  return db;
}

/**
 * What runs shared statements (see `sql`) on `db`, each prepared once: `{now}` is `now`, in
 * milliseconds since the epoch (by default, the time of the call).
 */
export function executor(db: Connection) {
  const prepared = new Map<Statement, Database.Statement>();
  return <R = unknown>(statement: Statement, params: Params = {}, now?: number): Result<R> => {
    const prepare =
      prepared.get(statement) ?? prepared.set(statement, db.prepare(statement.sqlite.text)).get(statement)!;
    const values = bind(statement.sqlite, params, now ?? Date.now());
    if (!prepare.reader) return { rows: [], changes: prepare.run(...values).changes };
    const rows = prepare.all(...values) as R[];
    return { rows, changes: rows.length };
  };
}
