import { resolve } from 'node:path';
import type { StoreConfig } from '../config.ts';
import { openSqliteStore } from './sqlite.ts';
import type { PlantStore } from './store.ts';

/**
 * Opens the store `DATABASE_URL` names, migrated to the newest schema. Nothing above it knows which.
 * Each create enqueues one webhook delivery per URL of `webhookUrls` (`WEBHOOK_URLS`).
 */
export async function openStore(
  config: StoreConfig,
  webhookUrls: readonly string[] = [],
): Promise<PlantStore> {
  if (config.kind === 'sqlite') return openSqliteStore(config.path, webhookUrls);
  // Loaded only when used: a SQLite deployment never pays for the PostgreSQL driver at start-up.
  const { openPostgresStore } = await import('./postgres.ts');
  return openPostgresStore({ ...config, webhookUrls });
}

/**
 * Brings the store's schema to the newest version and returns, for deployments that migrate as a
 * separate step. Safe to run while instances start or serve. Resolves with the PostgreSQL versions
 * applied now; SQLite applies its migrations whenever it is opened and reports none.
 */
export async function migrateStore(config: StoreConfig): Promise<number[] | undefined> {
  if (config.kind === 'postgres') return (await import('./postgres.ts')).migratePostgres(config);
  await openSqliteStore(config.path).close();
  return undefined;
}

/** Where the store is, for logs: the SQLite file, or the PostgreSQL server and database without credentials. */
export function describeStore(config: StoreConfig): string {
  if (config.kind === 'sqlite') return resolve(config.path);
  // Credentials can sit in the user part and in the query (`?password=`): keep neither.
  return config.url.replace(/^(postgres(?:ql)?:\/\/)[^@/?#]*@/, '$1').replace(/[?#].*$/, '');
}
