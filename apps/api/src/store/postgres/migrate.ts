import pg from 'pg';
import { type MigrateOptions, type MigrationResult, migrate } from '../migration-runner.ts';
import { atomically, bind } from '../sql.ts';
import { StoreUnavailableError } from '../contract.ts';
import { APPLICATION_NAME, type PostgresStoreOptions, toStoreError } from './connection.ts';

/** Migrations (waiting for the lock included) are not on a request path. */
const MIGRATION_TIMEOUT_MS = 60_000;
/** The advisory lock that serialises migrations across instances: any int8 nobody else takes. */
const MIGRATION_LOCK_KEY = '7234917730117001';

/** Migrates under a session advisory lock, so instances starting together apply each version once. */
export async function migratePostgres({
  url,
  timeoutMs,
  to,
}: Pick<PostgresStoreOptions, 'url' | 'timeoutMs'> & MigrateOptions): Promise<MigrationResult> {
  const client = new pg.Client({
    connectionString: url,
    connectionTimeoutMillis: timeoutMs,
    statement_timeout: MIGRATION_TIMEOUT_MS,
    query_timeout: MIGRATION_TIMEOUT_MS,
    application_name: `${APPLICATION_NAME}-migrate`,
  });
  client.on('error', () => {});
  const run = (text: string, values?: unknown[]) =>
    client.query(text, values).catch((cause: unknown) => {
      throw toStoreError(cause);
    });
  return migrate(
    {
      dialect: 'postgres',
      async locked(createTable, work) {
        try {
          await client.connect();
        } catch (cause) {
          await client.end().catch(() => {});
          throw new StoreUnavailableError('PostgreSQL could not be reached to migrate', { cause });
        }
        try {
          await run('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
          await run(createTable);
          return await work();
        } finally {
          // Ending the session releases the advisory lock too.
          await client.end().catch(() => {});
        }
      },
      // Each version is its own transaction.
      atomically: (work) => atomically(run, work),
      exec: async (sql) => void (await run(sql)),
      all: async ({ postgres }, params = {}) => (await run(postgres.text, bind(postgres, params))).rows,
    },
    { to },
  );
}
