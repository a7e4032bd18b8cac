import { afterAll, beforeAll } from 'vitest';
import { type ApiProcess, startApiProcess } from './api-process.ts';
import type { TestStore, TestStoreInstance } from './stores.ts';

/**
 * For the enclosing describe: before its tests, a fresh store of this kind and an api process on
 * it (handed to `use`), with `env` besides the store's; after them, both gone.
 */
export function apiOnStore(
  testStore: TestStore,
  use: (running: { api: ApiProcess; store: TestStoreInstance }) => void,
  env: Record<string, string> = {},
): void {
  let running: { api: ApiProcess; store: TestStoreInstance } | undefined;
  let store: TestStoreInstance | undefined;
  beforeAll(async () => {
    store = await testStore.setup();
    running = { api: await startApiProcess({ env: { ...env, ...store.env } }), store };
    use(running);
  });
  afterAll(async () => {
    await running?.api.stop();
    running?.api.cleanup();
    await store?.teardown();
  });
}
