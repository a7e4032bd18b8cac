import {
  type MigrateOptions,
  type MigrationDriver,
  type MigrationResult,
  migrate,
} from '../migration-runner.ts';
import { atomically, type Params, type Statement } from '../sql.ts';
import { type Connection, executor, openDatabase } from './connection.ts';

/** One transaction, begun IMMEDIATE (the write lock first), so two processes apply each version once. */
export function migrateSqlite(db: Connection, options?: MigrateOptions): Promise<MigrationResult> {
  const execute = executor(db);
  const driver: MigrationDriver = {
    dialect: 'sqlite',
    locked(createTable, work) {
      db.exec(createTable);
      return atomically((step) => db.exec(step === 'begin' ? 'BEGIN IMMEDIATE' : step), work);
    },
    atomically: (work) => work(),
    exec: async (sql) => void db.exec(sql),
    all: async <R>(statement: Statement, params?: Params) => execute<R>(statement, params).rows,
  };
  return migrate(driver, options);
}

export async function migrateSqliteFile(path: string, options?: MigrateOptions): Promise<MigrationResult> {
  // Not on a request path: let SQLite sync the COMMIT itself.
  const db = openDatabase(path, 'FULL');
  try {
    return await migrateSqlite(db, options);
  } finally {
    db.close();
  }
}
