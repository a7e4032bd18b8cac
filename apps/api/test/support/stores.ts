import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Database } from '../../src/store/sqlite/driver.ts';
import pg from 'pg';

/** A fresh, empty store for one test file, and a way to see what it holds. */
export type TestStoreInstance = {
  /** Environment for an api process using this store (DATABASE_URL, …). */
  env: Record<string, string>;
  /** Every stored id, ascending, read straight from the database (not through the api). */
  ids(): Promise<bigint[]>;
  /** Every webhook delivery, read straight from the database, oldest first. */
  deliveries(): Promise<StoredDelivery[]>;
  /**
   * Writes plants straight into the database, past every check of the api: rows as they were
   * written before the length limits, or by SQL.
   */
  insertPlants(plants: readonly SeedPlant[]): Promise<void>;
  /** The rows a read-only SQL statement answers, straight from the database. */
  rows(sql: string): Promise<Record<string, unknown>[]>;
  teardown(): Promise<void>;
};

export type SeedPlant = { id: bigint; name: string; tag?: string };

export type StoredDelivery = { id: string; url: string; status: string; attempts: number; payload: string };

const DELIVERIES =
  'SELECT id, url, status, attempts, payload FROM webhook_deliveries ORDER BY created_at, id';

/**
 * The stores every HTTP contract test runs against. SQLite always; PostgreSQL is added by the
 * PostgreSQL store's support code when a server is reachable (and required in CI).
 */
export type TestStore = {
  name: string;
  setup(): Promise<TestStoreInstance>;
};

export const sqliteTestStore: TestStore = {
  name: 'sqlite',
  async setup() {
    const dir = mkdtempSync(join(tmpdir(), 'plant-store-sqlite-'));
    const file = join(dir, 'plants.db');
    return {
      env: { DATABASE_URL: `file:${file}` },
      async ids() {
        const db = new Database(file, { readonly: true });
        try {
          db.defaultSafeIntegers(true);
          return db
            .prepare<[], { id: bigint }>('SELECT id FROM plants ORDER BY id')
            .all()
            .map((row) => row.id);
        } finally {
          db.close();
        }
      },
      async deliveries() {
        const db = new Database(file, { readonly: true });
        try {
          return db.prepare<[], StoredDelivery>(DELIVERIES).all();
        } finally {
          db.close();
        }
      },
      async rows(sql) {
        const db = new Database(file, { readonly: true });
        try {
          return db.prepare<[], Record<string, unknown>>(sql).all();
        } finally {
          db.close();
        }
      },
      async insertPlants(plants) {
        const db = new Database(file);
        try {
          db.pragma('busy_timeout = 5000');
          const insert = db.prepare('INSERT INTO plants (id, name, tag) VALUES (?, ?, ?)');
          db.transaction(() => {
            for (const { id, name, tag } of plants) insert.run(id, name, tag ?? null);
          })();
        } finally {
          db.close();
        }
      },
      async teardown() {
        rmSync(dir, { recursive: true, force: true });
      },
    };
  },
};

/**
 * The PostgreSQL server tests may use: `TEST_DATABASE_URL`, else the local one CI runs. Tests only
 * connect to it to create and drop their own `plants_test_*` databases.
 */
export const postgresAdminUrl = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** Why PostgreSQL cannot be used, or `undefined` when it answered (probed once per test file). */
const postgresProblem = await probe(postgresAdminUrl);

/**
 * Whether the PostgreSQL legs run. With `PLANTS_REQUIRE_POSTGRES=1` (CI) an unreachable server
 * throws instead, so the legs fail loudly rather than being skipped.
 */
export function postgresAvailable(): boolean {
  if (postgresProblem === undefined) return true;
  if (process.env.PLANTS_REQUIRE_POSTGRES === '1') {
    throw new Error(
      `PLANTS_REQUIRE_POSTGRES=1 but PostgreSQL at ${redact(postgresAdminUrl)} is not reachable: ${postgresProblem}`,
    );
  }
  return false;
}

/** Each setup creates a fresh database `plants_test_<random>` on the server; teardown drops it. */
export const postgresTestStore: TestStore = {
  name: 'postgres',
  async setup() {
    const database = `plants_test_${randomBytes(6).toString('hex')}`;
    await admin(`CREATE DATABASE ${database}`);
    const url = new URL(postgresAdminUrl);
    url.pathname = `/${database}`;
    return {
      env: { DATABASE_URL: url.href },
      async ids() {
        const client = new pg.Client({ connectionString: url.href });
        await client.connect();
        try {
          const { rows } = await client.query<{ id: string }>(
            'SELECT id::text AS id FROM plants ORDER BY plants.id',
          );
          return rows.map((row) => BigInt(row.id));
        } finally {
          await client.end();
        }
      },
      async deliveries() {
        const client = new pg.Client({ connectionString: url.href });
        await client.connect();
        try {
          return (await client.query<StoredDelivery>(DELIVERIES)).rows;
        } finally {
          await client.end();
        }
      },
      rows: (sql) => withPostgresClient(url.href, async (client) => (await client.query(sql)).rows),
      async insertPlants(plants) {
        const client = new pg.Client({ connectionString: url.href });
        await client.connect();
        try {
          // 100 rows a statement keeps each one a few megabytes even with 60,000-character names.
          for (let i = 0; i < plants.length; i += 100) {
            const chunk = plants.slice(i, i + 100);
            await client.query(
              'INSERT INTO plants (id, name, tag) SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[])',
              [
                chunk.map((plant) => plant.id.toString()),
                chunk.map((plant) => plant.name),
                chunk.map((plant) => plant.tag ?? null),
              ],
            );
          }
        } finally {
          await client.end();
        }
      },
      async teardown() {
        // FORCE ends connections a killed api process may have left behind.
        await admin(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
      },
    };
  },
};

/** Runs `use` on a new connection to the PostgreSQL database at `url`, ended afterwards. */
export async function withPostgresClient<T>(url: string, use: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end();
  }
}

export function testStores(): TestStore[] {
  return postgresAvailable() ? [sqliteTestStore, postgresTestStore] : [sqliteTestStore];
}

async function admin(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: postgresAdminUrl, connectionTimeoutMillis: 5_000 });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

async function probe(url: string): Promise<string | undefined> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.query('SELECT 1');
    return undefined;
  } catch (error) {
    return error instanceof Error
      ? error.message || String((error as { code?: unknown }).code)
      : String(error);
  } finally {
    await client.end().catch(() => {});
  }
}

function redact(url: string): string {
  const parsed = new URL(url);
  parsed.password = '';
  return parsed.href;
}
