import type { StoreConfig } from '../config.ts';
import type { MigrateOptions, MigrationResult } from './migrate.ts';
import { migrateSqliteFile } from './sqlite/migrate.ts';
import { openSqliteStore } from './sqlite.ts';
import type { PlantStore } from './store.ts';

/** Opens the store `DATABASE_URL` names, migrated to the newest schema. Nothing above it knows which. */
export async function openStore(config: StoreConfig): Promise<PlantStore> {
  if (config.kind === 'sqlite') return openSqliteStore(config.path);
  // Loaded only when used: a SQLite deployment never pays for the PostgreSQL driver at start-up.
  const { openPostgresStore } = await import('./postgres.ts');
  return openPostgresStore(config);
}

/** Takes the schema to `to` (a separate step, or going back); safe while instances serve, going up. */
export async function migrateStore(config: StoreConfig, options?: MigrateOptions): Promise<MigrationResult> {
  if (config.kind === 'postgres')
    return (await import('./postgres.ts')).migratePostgres({ ...config, ...options });
  return migrateSqliteFile(config.path, options);
}
