import { afterAll, beforeAll } from 'vitest';
import { type RunningApi, startInProcess } from './in-process.ts';
import type { SeedPlant, TestStore, TestStoreInstance } from './stores.ts';

/**
 * For the enclosing describe: before its tests, a fresh store of this kind and the api on it, in
 * this process (handed to `use`); after them, both gone. `options` are `startInProcess`'s, with
 * `env` added to the store's, and `seed`: plants written straight into the store before `use`.
 */
export function apiOnStore(
  testStore: TestStore,
  use: (running: { api: RunningApi; store: TestStoreInstance }) => void,
  { seed = [], ...options }: Parameters<typeof startInProcess>[0] & { seed?: readonly SeedPlant[] } = {},
): void {
  let running: { api: RunningApi; store: TestStoreInstance } | undefined;
  let store: TestStoreInstance | undefined;
  beforeAll(async () => {
    store = await testStore.setup();
    running = { api: await startInProcess({ ...options, env: { ...store.env, ...options.env } }), store };
    if (seed.length > 0) await store.insertPlants(seed);
    use(running);
  });
  afterAll(async () => {
    await running?.api.stop();
    running?.api.cleanup();
    await store?.teardown();
  });
}
