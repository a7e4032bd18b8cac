/**
 * The stores every HTTP contract test runs against. SQLite always; PostgreSQL is added by the
 * PostgreSQL store's support code when a server is reachable (and required in CI).
 */
export type TestStore = {
  name: string;
  /** Environment for an api process using a fresh, empty store of this kind. */
  setup(): Promise<{ env: Record<string, string>; teardown(): Promise<void> }>;
};

export const sqliteTestStore: TestStore = {
  name: 'sqlite',
  async setup() {
    return { env: {}, async teardown() {} };
  },
};

export function testStores(): TestStore[] {
  return [sqliteTestStore];
}
