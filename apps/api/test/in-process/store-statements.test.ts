import { Database } from '../../src/store/sqlite/driver.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.ts';
import { migrateStore } from '../../src/store/open-store.ts';
// Every module that defines statements, so that `registered` holds them all.
import '../../src/store/postgres/store.ts';
import '../../src/store/sqlite/store.ts';
import { registered } from '../../src/store/sql.ts';
import { TOKEN } from '../support/http.ts';
import { type TestStoreInstance, testStores, withPostgresClient } from '../support/stores.ts';

/** The statements a store runs: those both share, and its own (named `<dialect>.…`). */
const statementsOf = (dialect: 'sqlite' | 'postgres') =>
  [...registered.values()].filter(
    ({ name }) => !name.startsWith(dialect === 'sqlite' ? 'postgres.' : 'sqlite.'),
  );

/** Statements PostgreSQL's PREPARE does not take (transaction control). */
const UNPREPARABLE = new Set([
  'postgres.transaction.begin',
  'postgres.transaction.commit',
  'postgres.transaction.rollback',
]);

describe.each(testStores())('the statements of the $name store', (testStore) => {
  let instance: TestStoreInstance;
  beforeAll(async () => {
    instance = await testStore.setup();
    await migrateStore(loadConfig({ ...instance.env, API_TOKENS: TOKEN }).store);
  });
  afterAll(() => instance.teardown());

  it('each compiles, dialect words and parameters, to SQL the migrated schema prepares', async () => {
    const url = instance.env.DATABASE_URL!;
    const failures: string[] = [];
    if (testStore.name === 'sqlite') {
      const db = new Database(url.slice('file:'.length));
      try {
        for (const { name, sqlite } of statementsOf('sqlite')) {
          try {
            db.prepare(sqlite.text);
            // One value bound per `?`, in order.
            const placeholders = sqlite.text.split('?').length - 1;
            if (placeholders !== sqlite.names.length) failures.push(`${name}: ${placeholders} placeholders`);
          } catch (error) {
            failures.push(`${name}: ${(error as Error).message}`);
          }
        }
      } finally {
        db.close();
      }
      expect(statementsOf('sqlite').length).toBeGreaterThan(40);
    } else {
      await withPostgresClient(url, async (client) => {
        for (const [i, { name, postgres }] of statementsOf('postgres').entries()) {
          if (UNPREPARABLE.has(name)) continue;
          await client.query(`PREPARE statement_${i} AS ${postgres.text}`).catch((error: Error) => {
            failures.push(`${name}: ${error.message}`);
          });
        }
      });
      expect(statementsOf('postgres').length).toBeGreaterThan(40);
    }
    expect(failures).toStrictEqual([]);
  });
});
