import { LATEST_VERSION, type Migration, migrations } from './migrations.ts';
import { type Db, type Dialect, statements } from './sql.ts';
import { StoreUnavailableError } from './contract.ts';

export type MigrationDriver = Pick<Db, 'all'> & {
  dialect: Dialect;
  /** Runs `work` holding the lock that lets one process migrate at a time, `createTable` run first. */
  locked<T>(createTable: string, work: () => Promise<T>): Promise<T>;
  atomically(work: () => Promise<void>): Promise<void>;
  exec(sql: string): Promise<void>;
};

const CREATE_TABLE = (dialect: Dialect) =>
  `CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at ${dialect === 'sqlite' ? 'TEXT NOT NULL' : 'TIMESTAMPTZ NOT NULL DEFAULT now()'})`;
const LABEL = { sqlite: 'SQLite', postgres: 'PostgreSQL' } as const;

const SQL = statements('migrations', {
  applied: 'SELECT version FROM schema_migrations',
  record: 'INSERT INTO schema_migrations (version, name, applied_at) VALUES (@version, @name, @appliedAt)',
  forget: 'DELETE FROM schema_migrations WHERE version = @version',
});

/** Where to take the schema: a version, or 0 for none; by default the newest. */
export type MigrateOptions = { to?: number };

export type MigrationResult = { applied: number[]; reverted: number[] };

export function isSchemaVersion(version: number): boolean {
  return version === 0 || migrations.some((migration) => migration.version === version);
}

/** Reverts the versions above `to`, newest first, then applies the missing ones; a newer release's stay. */
export async function migrate(
  driver: MigrationDriver,
  { to = LATEST_VERSION }: MigrateOptions = {},
): Promise<MigrationResult> {
  if (!isSchemaVersion(to)) throw new RangeError(`There is no schema version ${to}`);
  return driver.locked(CREATE_TABLE(driver.dialect), async () => {
    const applied = await driver.all<{ version: number | bigint }>(SQL.applied);
    const done = new Set(applied.map((row) => Number(row.version)));
    const down = migrations.filter(({ version }) => version > to && done.has(version)).reverse();
    const up = migrations.filter(({ version }) => version <= to && !done.has(version));
    for (const migration of down) await run(driver, migration, 'down');
    for (const migration of up) await run(driver, migration, 'up');
    return { applied: up.map(({ version }) => version), reverted: down.map(({ version }) => version) };
  });
}

async function run(driver: MigrationDriver, migration: Migration, direction: 'up' | 'down'): Promise<void> {
  const { version, name } = migration;
  try {
    await driver.atomically(async () => {
      const sql = migration[direction];
      await driver.exec(typeof sql === 'string' ? sql : sql(driver.dialect));
      const appliedAt = new Date().toISOString();
      await driver.all(direction === 'up' ? SQL.record : SQL.forget, { version, name, appliedAt });
    });
  } catch (cause) {
    if (cause instanceof StoreUnavailableError) throw cause;
    const what = direction === 'up' ? 'migration' : 'reverting migration';
    throw new Error(`${LABEL[driver.dialect]} ${what} ${version} (${name}) failed`, { cause });
  }
}
