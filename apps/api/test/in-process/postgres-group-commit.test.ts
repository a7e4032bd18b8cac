import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.ts';
import { openStore } from '../../src/store/open-store.ts';
import { EVENTS_CHANNEL } from '../../src/store/postgres/plants.ts';
import { DURABLE_SESSION } from '../../src/store/postgres/store.ts';
import type { NewDelivery, PlantStore } from '../../src/store/contract.ts';
import { TOKEN } from '../support/http.ts';
import {
  postgresAvailable,
  postgresTestStore,
  type TestStoreInstance,
  withPostgresClient,
} from '../support/stores.ts';

const delivery = (n: number): NewDelivery => ({
  id: `msg_${String(n).padStart(32, '0')}`,
  url: 'http://127.0.0.1:9/hook',
  payload: `{"n":${n}}`,
});

describe.skipIf(!postgresAvailable())('PostgreSQL group commit', () => {
  let instance: TestStoreInstance;
  let store: PlantStore;
  const url = () => instance.env.DATABASE_URL!;

  beforeEach(async () => {
    instance = await postgresTestStore.setup();
    store = await openStore(loadConfig({ ...instance.env, API_TOKENS: TOKEN }).store);
  });
  afterEach(async () => {
    await store.close();
    await instance.teardown();
  });

  it('commits the creates of one turn together, answering each on its own', async () => {
    const results = await Promise.allSettled([
      store.create({ id: 3n, name: 'Fern' }, { outbox: { deliveries: [delivery(1)] } }),
      store.create({ id: 3n, name: 'Second Fern' }, { outbox: { deliveries: [delivery(2)] } }),
      store.create({ id: 2n ** 63n - 1n, name: 'Moss', tag: 'green' }),
      store.create({ id: -(2n ** 63n), name: 'Cactus' }, { outbox: { deliveries: [delivery(3)] } }),
    ]);
    expect(
      results.map((result) => (result.status === 'fulfilled' ? result.value : 'rejected')),
    ).toStrictEqual([expect.any(BigInt), false, expect.any(BigInt), expect.any(BigInt)]);
    expect(await store.get(3n)).toStrictEqual({
      id: 3n,
      name: 'Fern',
      version: results[0].status === 'fulfilled' && results[0].value,
    });
    expect((await instance.deliveries()).map((row) => row.id).sort()).toStrictEqual([
      delivery(1).id,
      delivery(3).id,
    ]);
    // One transaction: the three plants of the first batch share the inserting transaction id.
    const xids = await withPostgresClient(url(), (client) =>
      client.query<{ xmin: string }>('SELECT DISTINCT xmin::text AS xmin FROM plants'),
    );
    expect(xids.rows).toHaveLength(1);
  });

  it('fails only the create the server refuses, not the others of its batch', async () => {
    const results = await Promise.allSettled([
      store.create({ id: 1n, name: 'Fern' }),
      // PostgreSQL text cannot hold NUL: this statement fails, whatever else it carries.
      store.create({ id: 2n, name: 'bad\u0000name' }, { outbox: { deliveries: [delivery(1)] } }),
      store.create({ id: 3n, name: 'Moss' }, { outbox: { deliveries: [delivery(2)] } }),
    ]);
    expect(results[0]).toStrictEqual({ status: 'fulfilled', value: expect.any(BigInt) });
    expect(results[1]!.status).toBe('rejected');
    expect(results[2]).toStrictEqual({ status: 'fulfilled', value: expect.any(BigInt) });
    expect(await instance.ids()).toStrictEqual([1n, 3n]);
    expect((await instance.deliveries()).map((row) => row.id)).toStrictEqual([delivery(2).id]);
  });

  it('sets synchronous_commit = on on its connections, whatever the database default', async () => {
    const database = new URL(url()).pathname.slice(1);
    await withPostgresClient(url(), (client) =>
      client.query(`ALTER DATABASE ${database} SET synchronous_commit = off`),
    );
    const show = async (options?: string) => {
      const client = new pg.Client({ connectionString: url(), options });
      await client.connect();
      try {
        return (await client.query<{ synchronous_commit: string }>('SHOW synchronous_commit')).rows[0]!
          .synchronous_commit;
      } finally {
        await client.end();
      }
    };
    expect(await show()).toBe('off');
    expect(await show(DURABLE_SESSION)).toBe('on');
  });

  it('NOTIFYs the events channel for the updates and deletes that append an event, and only for those', async () => {
    const version = await store.create({ id: 1n, name: 'Fern' });
    await withPostgresClient(url(), async (client) => {
      let heard = 0;
      client.on('notification', () => heard++);
      await client.query(`LISTEN "${EVENTS_CHANNEL}"`);
      /** How many notifications `change` gave: those of its COMMIT come before the next answer. */
      const notified = async (change: () => Promise<unknown>) => {
        const before = heard;
        await change();
        await new Promise((resolve) => setTimeout(resolve, 100));
        await client.query('SELECT 1');
        return heard - before;
      };
      expect(await notified(() => store.update({ id: 1n, name: 'Fern' }))).toBe(0);
      expect(await notified(() => store.update({ id: 2n, name: 'Moss' }))).toBe(0);
      expect(
        await notified(() => store.update({ id: 1n, tag: 'green' }, { expected: [version as bigint] })),
      ).toBe(1);
      expect(await notified(() => store.delete(1n, { expected: [version as bigint] }))).toBe(0);
      expect(await notified(() => store.delete(1n))).toBe(1);
    });
  });
});
