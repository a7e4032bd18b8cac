import { sharedParts } from '../shared.ts';
import { sqliteCommit } from './commit.ts';
import { openDatabase } from './connection.ts';
import { migrateSqlite } from './migrate.ts';
import { sqlitePlants } from './plants.ts';
import type { PlantStore, StoreHooks } from '../contract.ts';

/** The embedded store: an SQLite file, migrated to the newest schema, written by group commit. */
export async function openSqliteStore(path: string, { commits }: StoreHooks = {}): Promise<PlantStore> {
  // Durability comes from the fdatasync of the log after each commit (see commit.ts), not from SQLite.
  const db = openDatabase(path, 'NORMAL');
  db.defaultSafeIntegers(true);
  await migrateSqlite(db);
  const engine = sqliteCommit(db, path, commits);
  return {
    ...sqlitePlants(db, engine),
    ...sharedParts(engine.db, engine.watch),
    failed: engine.failed,
    close: engine.close,
  } satisfies PlantStore;
}
