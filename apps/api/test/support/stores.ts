import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';

/** A fresh, empty store for one test file, and a way to see what it holds. */
export type TestStoreInstance = {
  /** Environment for an api process using this store (DATABASE_URL, …). */
  env: Record<string, string>;
  /** Every stored id, ascending, read straight from the database (not through the api). */
  ids(): Promise<bigint[]>;
  teardown(): Promise<void>;
};

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
      async teardown() {
        rmSync(dir, { recursive: true, force: true });
      },
    };
  },
};

export function testStores(): TestStore[] {
  return [sqliteTestStore];
}
