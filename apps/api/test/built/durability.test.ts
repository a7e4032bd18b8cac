import { Database } from '../../src/store/sqlite/driver.ts';
import { describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../src/store/sqlite/store.ts';
import { startApiProcess } from '../support/api-process.ts';
import { postPlant } from '../support/http.ts';
import { type TestStoreInstance, testStores } from '../support/stores.ts';

describe('the SQLite store', () => {
  it('answers a create only once another connection can read the committed row', async () => {
    const { mkdtempSync, rmSync } = await import('node:fs');
    const { join } = await import('node:path');
    const { tmpdir } = await import('node:os');
    const dir = mkdtempSync(join(tmpdir(), 'plant-store-durable-'));
    const file = join(dir, 'plants.db');
    const store = await openSqliteStore(file);
    const observer = new Database(file, { readonly: true });
    observer.defaultSafeIntegers(true);
    const seen = observer.prepare<[bigint], { id: bigint }>('SELECT id FROM plants WHERE id = ?');
    try {
      const ids = Array.from({ length: 50 }, (_, i) => 9007199254740993n + BigInt(i));
      await Promise.all(
        ids.map(async (id) => {
          expect(await store.create({ id, name: 'Fern' })).toBeTypeOf('bigint');
          // Resolved means committed: a separate connection sees it at once.
          expect(seen.get(id)?.id).toBe(id);
        }),
      );
      expect(await store.create({ id: ids[0]!, name: 'Again' })).toBe(false);
      expect(await store.get(ids[0]!)).toEqual({ id: ids[0], name: 'Fern', version: expect.any(BigInt) });
    } finally {
      observer.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe.each(testStores())('acknowledged plants survive on $name', (testStore) => {
  let store: TestStoreInstance;

  it('after a clean restart', async () => {
    store = await testStore.setup();
    const first = await startApiProcess({ env: store.env });
    try {
      expect((await postPlant(first.url, '{"id":9007199254740993,"name":"Fern","tag":"herb"}')).status).toBe(
        200,
      );
      expect(await first.stop()).toBe(0);
      const second = await startApiProcess({ env: store.env, dataDir: first.dataDir });
      try {
        expect((await postPlant(second.url, '{"id":9007199254740993,"name":"Fern"}')).status).toBe(409);
        expect(await store.ids()).toEqual([9007199254740993n]);
      } finally {
        await second.stop();
      }
    } finally {
      first.cleanup();
      await store.teardown();
    }
  });

  it('after SIGKILL under concurrent load: every acknowledged id is stored', async () => {
    store = await testStore.setup();
    const api = await startApiProcess({ env: store.env });
    const acknowledged: bigint[] = [];
    let killed = false;
    let next = 2n ** 53n;
    const client = async () => {
      while (!killed) {
        const id = next++;
        try {
          const answer = await postPlant(api.url, `{"id":${id},"name":"Fern"}`);
          if (answer.status === 200) acknowledged.push(id);
        } catch {
          // The connection died with the process: this create was not acknowledged.
        }
      }
    };
    try {
      const clients = Array.from({ length: 16 }, client);
      await new Promise((resolve) => setTimeout(resolve, 1500));
      await api.kill();
      killed = true;
      await Promise.all(clients);
      expect(acknowledged.length).toBeGreaterThan(100);
      const stored = new Set(await store.ids());
      const lost = acknowledged.filter((id) => !stored.has(id));
      expect(lost).toEqual([]);
    } finally {
      killed = true;
      api.cleanup();
      await store.teardown();
    }
  });
});
