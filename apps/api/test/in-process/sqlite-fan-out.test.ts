import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.ts';
import { openStore } from '../../src/store/open-store.ts';
import { Database } from '../../src/store/sqlite/driver.ts';
import type { PlantStore } from '../../src/store/contract.ts';
import { TOKEN } from '../support/http.ts';
import { sqliteTestStore, type TestStoreInstance } from '../support/stores.ts';

const endpoint = (n: number) => ({
  id: `we_${String(n).padStart(24, '0')}`,
  owner: 'alice',
  url: `http://127.0.0.1:9/${n}`,
  description: null,
  secret: `sealed-${n}`,
});
const payload = (id: number) => `{"id":${id},"name":"Fern"}`;

/**
 * The SQLite commit runs a create's fan-out only while an endpoint is enabled, as the commit's
 * transaction sees it (sqlite/commit.ts): what it reads once a commit must follow the endpoints'
 * changes within that commit, and other processes' between commits.
 */
describe('fan-out on the SQLite store', () => {
  let instance: TestStoreInstance;
  let store: PlantStore;
  beforeEach(async () => {
    instance = await sqliteTestStore.setup();
    store = await openStore(loadConfig({ ...instance.env, API_TOKENS: TOKEN }).store);
  });
  afterEach(async () => {
    await store.close();
    await instance.teardown();
  });

  const fannedOut = async (n: number) =>
    (await store.deliveries.claim({ endpointId: endpoint(n).id, limit: 100, leaseMs: 60_000 }))
      .map((delivery) => delivery.payload)
      .sort();

  it('follows an endpoint registered and disabled between the creates of one commit', async () => {
    const create = (id: number) =>
      store.create({ id: BigInt(id), name: 'Fern' }, { outbox: { endpointPayload: payload(id) } });
    // One turn: one group commit, its writes in this order.
    await Promise.all([
      create(1),
      store.webhookEndpoints.create(endpoint(1), { maxPerOwner: 3 }),
      create(2),
      store.webhookEndpoints.disable(endpoint(1).id, 'token_inactive'),
      create(3),
      store.webhookEndpoints.enable(endpoint(1).id),
      create(4),
    ]);
    // Plant 2's delivery was failed by the disabling (as any pending one would be); plant 4's is due.
    const listed = await store.deliveries.listForEndpoint({ endpointId: endpoint(1).id, limit: 10 });
    expect(listed!.deliveries.map((delivery) => delivery.status).sort()).toStrictEqual(['failed', 'pending']);
    expect(await fannedOut(1)).toStrictEqual([payload(4)]);
  });

  it('follows an endpoint registered between the updates and deletes of one commit', async () => {
    await store.create({ id: 1n, name: 'Fern' });
    await store.create({ id: 2n, name: 'Moss' });
    const events: ('plant.updated' | 'plant.deleted')[] = ['plant.updated', 'plant.deleted'];
    await Promise.all([
      store.update({ id: 1n, name: 'Fern 2' }),
      store.webhookEndpoints.create({ ...endpoint(1), events }, { maxPerOwner: 3 }),
      store.update({ id: 1n, name: 'Fern 3' }),
      store.delete(2n),
    ]);
    expect(await fannedOut(1)).toStrictEqual([
      '{"id":1,"name":"Fern 3","version":4,"changed":["name"]}',
      '{"id":2}',
    ]);
  });

  it('follows an endpoint another process registered between two commits', async () => {
    expect(await store.create({ id: 1n, name: 'Fern' }, { outbox: { endpointPayload: payload(1) } })).toEqual(
      expect.any(BigInt),
    );
    const other = new Database(instance.env.DATABASE_URL!.slice('file:'.length));
    try {
      other
        .prepare(
          'INSERT INTO webhook_endpoints (id, owner, url, secret, events, created_at) VALUES (?, ?, ?, ?, ?, ?)',
        )
        .run(endpoint(2).id, 'alice', endpoint(2).url, 'sealed-2', 'plant.created', Date.now());
    } finally {
      other.close();
    }
    expect(await store.create({ id: 2n, name: 'Fern' }, { outbox: { endpointPayload: payload(2) } })).toEqual(
      expect.any(BigInt),
    );
    expect(await fannedOut(2)).toStrictEqual([payload(2)]);
  });
});
