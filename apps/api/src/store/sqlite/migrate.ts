import Database from 'better-sqlite3';
import { type MigrateOptions, type MigrationDriver, type MigrationResult, migrate } from '../migrate.ts';
import { makePrivate } from '../private-files.ts';

/**
 * Migrates an open SQLite connection. The whole run is one transaction: all or nothing. It begins
 * IMMEDIATE, which takes the write lock first, so two processes starting together apply each
 * version once (the other waits up to the connection's busy_timeout).
 */
export function migrateSqlite(db: Database.Database, options?: MigrateOptions): Promise<MigrationResult> {
  const driver: MigrationDriver = {
    dialect: 'sqlite',
    label: 'SQLite',
    async locked(work) {
      db.exec(
        'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)',
      );
      db.exec('BEGIN IMMEDIATE');
      try {
        const result = await work();
        db.exec('COMMIT');
        return result;
      } catch (error) {
        if (db.inTransaction) db.exec('ROLLBACK');
        throw error;
      }
    },
    async applied() {
      return db
        .prepare<[], { version: number | bigint }>('SELECT version FROM schema_migrations')
        .all()
        .map((row) => Number(row.version));
    },
    async step(sql, { version, name }, direction) {
      db.exec(sql);
      if (direction === 'down') db.prepare('DELETE FROM schema_migrations WHERE version = ?').run(version);
      else {
        db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(
          version,
          name,
          new Date().toISOString(),
        );
      }
    },
  };
  return migrate(driver, options);
}

/** Migrates the SQLite file at `path` on a connection of its own, for the `migrate` command. */
export async function migrateSqliteFile(path: string, options?: MigrateOptions): Promise<MigrationResult> {
  makePrivate(path);
  const db = new Database(path);
  try {
    db.pragma('journal_mode = WAL');
    // Not on a request path: let SQLite sync the COMMIT itself.
    db.pragma('synchronous = FULL');
    db.pragma('busy_timeout = 5000');
    return await migrateSqlite(db, options);
  } finally {
    db.close();
  }
}
