import type { StoreConfig } from '../config/config.ts';
import type { MigrateOptions, MigrationResult } from './migration-runner.ts';
import { migrateSqliteFile } from './sqlite/migrate.ts';
import { openSqliteStore } from './sqlite/store.ts';
import type { PlantStore, StoreHooks } from './contract.ts';

/** Opens the store `DATABASE_URL` names, migrated to the newest schema. Nothing above it knows which. */
export async function openStore(config: StoreConfig, hooks?: StoreHooks): Promise<PlantStore> {
  if (config.kind === 'sqlite') return openSqliteStore(config.path, hooks);
  // Loaded only when used: a SQLite deployment never pays for the PostgreSQL driver at start-up.
  const { openPostgresStore } = await import('./postgres/store.ts');
  return openPostgresStore(config, hooks);
}

/** Takes the schema to `to` (a separate step, or going back); safe while instances serve, going up. */
export async function migrateStore(config: StoreConfig, options?: MigrateOptions): Promise<MigrationResult> {
  if (config.kind === 'postgres')
    return (await import('./postgres/store.ts')).migratePostgres({ ...config, ...options });
  return migrateSqliteFile(config.path, options);
}
