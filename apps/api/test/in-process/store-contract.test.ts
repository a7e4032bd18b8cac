import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { NewPlant } from '@plant-store/schema';
import type { PlantPage } from '../../src/store/contract.ts';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.ts';
import { openStore } from '../../src/store/open-store.ts';
import {
  type EndpointDelivery,
  type NewDelivery,
  type PlantStore,
  StoreUnavailableError,
} from '../../src/store/contract.ts';
import { newPlantWebhook } from '../../src/webhooks/event.ts';
import { TOKEN } from '../support/http.ts';
import { type TestStoreInstance, testStores } from '../support/stores.ts';

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const SAFE = 2n ** 53n;
/** Ids where a store that went through a float64 (or an int32) would round, wrap or reorder. */
const EDGE_IDS = [
  INT64_MIN,
  INT64_MIN + 1n,
  -(SAFE + 1n),
  -SAFE,
  -(SAFE - 1n),
  -(2n ** 31n) - 1n,
  -1n,
  0n,
  1n,
  2n ** 31n,
  SAFE - 1n,
  SAFE,
  SAFE + 1n,
  INT64_MAX - 1n,
  INT64_MAX,
];

/** A page without its plants' versions, for the tests of what a page holds. */
const unversioned = ({ plants, more }: PlantPage) => ({
  plants: plants.map(({ version, ...plant }) => plant),
  more,
});
const ascending = (ids: bigint[]) => [...ids].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
const shuffled = <T>(items: T[]) =>
  items
    .map((item) => ({ item, key: Math.random() }))
    .sort((a, b) => a.key - b.key)
    .map(({ item }) => item);

/**
 * The storage contract (store/contract.ts), one suite registered per store as the api runs it:
 * DATABASE_URL → loadConfig → openStore. SQLite always; PostgreSQL whenever it is reachable.
 */
describe.each(testStores())('the $name store', (testStore) => {
  let instance: TestStoreInstance;
  let store: PlantStore;
  const open = () => openStore(loadConfig({ ...instance.env, API_TOKENS: TOKEN }).store);

  beforeEach(async () => {
    instance = await testStore.setup();
    store = await open();
  });
  afterEach(async () => {
    await store.close();
    await instance.teardown();
  });

  describe('delete', () => {
    it('deletes exactly the plant asked for, once', async () => {
      for (const id of [SAFE, SAFE + 1n, INT64_MIN, INT64_MAX])
        expect(await store.create({ id, name: 'P' })).toEqual(expect.any(BigInt));
      expect(await store.delete(SAFE + 1n)).toBe(true);
      expect(await store.get(SAFE + 1n)).toBeUndefined();
      expect(await store.get(SAFE)).toStrictEqual({ id: SAFE, name: 'P', version: expect.any(BigInt) });
      expect(await store.delete(SAFE + 1n)).toBe(false);
      expect(await store.delete(404n)).toBe(false);
      expect((await store.list({ limit: 10 })).plants.map((plant) => plant.id)).toEqual([
        INT64_MIN,
        SAFE,
        INT64_MAX,
      ]);
    });

    it('lets a deleted id be created again', async () => {
      expect(await store.create({ id: 5n, name: 'Old' })).toEqual(expect.any(BigInt));
      expect(await store.delete(5n)).toBe(true);
      expect(await store.create({ id: 5n, name: 'New' })).toEqual(expect.any(BigInt));
      expect(await store.get(5n)).toStrictEqual({ id: 5n, name: 'New', version: expect.any(BigInt) });
    });

    it('deletes once when many delete the same id at the same time', async () => {
      expect(await store.create({ id: 6n, name: 'P' })).toEqual(expect.any(BigInt));
      const results = await Promise.all(Array.from({ length: 20 }, () => store.delete(6n)));
      expect(results.filter(Boolean)).toHaveLength(1);
    });

    it('keeps a deletion after reopening', async () => {
      expect(await store.create({ id: 9n, name: 'P' })).toEqual(expect.any(BigInt));
      expect(await store.delete(9n)).toBe(true);
      await store.close();
      store = await open();
      expect(await store.get(9n)).toBeUndefined();
    });
  });

  describe('create and get', () => {
    it('creates a plant and reads back exactly what was created', async () => {
      expect(await store.create({ id: 1n, name: 'Fern', tag: 'herb' })).toEqual(expect.any(BigInt));
      expect(await store.create({ id: 2n, name: 'Moss' })).toEqual(expect.any(BigInt));
      expect(await store.get(1n)).toStrictEqual({
        id: 1n,
        name: 'Fern',
        tag: 'herb',
        version: expect.any(BigInt),
      });
      // No tag stays no tag: not null, not "".
      expect(await store.get(2n)).toStrictEqual({ id: 2n, name: 'Moss', version: expect.any(BigInt) });
      expect(await store.create({ id: 3n, name: '', tag: '' })).toEqual(expect.any(BigInt));
      expect(await store.get(3n)).toStrictEqual({ id: 3n, name: '', tag: '', version: expect.any(BigInt) });
    });

    it('answers undefined for an id it does not hold', async () => {
      expect(await store.get(404n)).toBeUndefined();
    });

    it('answers false for an existing id and keeps the first plant', async () => {
      expect(await store.create({ id: 7n, name: 'Fern', tag: 'herb' })).toEqual(expect.any(BigInt));
      expect(await store.create({ id: 7n, name: 'Cactus' })).toBe(false);
      expect(await store.get(7n)).toStrictEqual({
        id: 7n,
        name: 'Fern',
        tag: 'herb',
        version: expect.any(BigInt),
      });
      expect((await store.list({ limit: 10 })).plants).toHaveLength(1);
    });

    it('keeps text exactly: quotes, backslashes, non-ASCII and long names', async () => {
      const name = `O'Brien "fern" \\ ; DROP TABLE plants; -- ü 🌿 ${'x'.repeat(10_000)}`;
      expect(await store.create({ id: 8n, name, tag: '多肉植物' })).toEqual(expect.any(BigInt));
      expect(await store.get(8n)).toStrictEqual({
        id: 8n,
        name,
        tag: '多肉植物',
        version: expect.any(BigInt),
      });
    });
  });

  describe('update', () => {
    it('changes what it names with a plant.updated event whose id is the new version; a no-op is none', async () => {
      const v1 = (await store.create({ id: 1n, name: 'Fern', tag: 'herb' })) as bigint;
      const renamed = await store.update({ id: 1n, name: 'Moss' });
      const v2 = renamed && 'plant' in renamed ? renamed.plant.version : 0n;
      expect(v2).toBeGreaterThan(v1);
      expect(renamed).toStrictEqual({
        plant: { id: 1n, name: 'Moss', tag: 'herb', version: v2 },
        changed: ['name'],
      });
      expect(await store.update({ id: 1n, name: 'Moss', tag: 'herb' })).toStrictEqual({
        plant: { id: 1n, name: 'Moss', tag: 'herb', version: v2 },
        changed: [],
      });
      const untagged = await store.update({ id: 1n, tag: null }, { expected: [v1, v2] });
      const v3 = untagged && 'plant' in untagged ? untagged.plant.version : 0n;
      expect(untagged).toStrictEqual({ plant: { id: 1n, name: 'Moss', version: v3 }, changed: ['tag'] });
      expect(await store.update({ id: 1n, name: 'Ivy' }, { expected: [v2] })).toStrictEqual({ stale: v3 });
      expect(await store.update({ id: 2n, name: 'Ivy' }, { expected: 'any' })).toBeUndefined();
      expect(await store.get(1n)).toStrictEqual({ id: 1n, name: 'Moss', version: v3 });
      const events = await store.events.after(v1 - 1n, 10);
      expect(events.map(({ id, type, plant }) => ({ id, type, plant }))).toStrictEqual([
        { id: v1, type: 'plant.created', plant: { id: 1n, name: 'Fern', tag: 'herb', version: v1 } },
        { id: v2, type: 'plant.updated', plant: { id: 1n, name: 'Moss', tag: 'herb', version: v2 } },
        { id: v3, type: 'plant.updated', plant: { id: 1n, name: 'Moss', version: v3 } },
      ]);
      expect(events.map((event) => ('changed' in event ? event.changed : null))).toStrictEqual([
        null,
        ['name'],
        ['tag'],
      ]);
      // A delete expecting another version changes nothing.
      expect(await store.delete(1n, { expected: [v2] })).toStrictEqual({ stale: v3 });
      expect(await store.delete(1n, { expected: [v3] })).toBe(true);
      expect(await store.get(1n)).toBeUndefined();
    });

    it('lists by tag and name prefix, exactly, with the cursor', async () => {
      const plants = [
        { id: 1n, name: 'Fern', tag: 'a' },
        { id: 2n, name: 'fern', tag: 'a' },
        { id: 3n, name: 'Ficus', tag: 'b' },
        { id: 4n, name: 'Fe%n', tag: 'a' },
        { id: 5n, name: 'Fern 2' },
      ];
      for (const plant of shuffled(plants)) await store.create(plant);
      const ids = async (options: Parameters<PlantStore['list']>[0]) =>
        (await store.list(options)).plants.map((plant) => plant.id);
      expect(await ids({ limit: 10, tag: 'a' })).toStrictEqual([1n, 2n, 4n]);
      expect(await ids({ limit: 10, tag: 'a', after: 1n })).toStrictEqual([2n, 4n]);
      expect(await ids({ limit: 10, namePrefix: 'Fe' })).toStrictEqual([1n, 4n, 5n]);
      expect(await ids({ limit: 10, namePrefix: 'Fe%' })).toStrictEqual([4n]);
      expect(await ids({ limit: 10, namePrefix: 'Fern', tag: 'a' })).toStrictEqual([1n]);
      expect(await store.list({ limit: 1, tag: 'a' })).toStrictEqual({
        plants: [{ ...plants[0], version: expect.any(BigInt) }],
        more: true,
      });
    });
  });

  describe('int64 ids', () => {
    it('stores and reads back every id exactly, as a bigint, over the ±2^63 bounds and 2^53±1', async () => {
      for (const id of shuffled(EDGE_IDS))
        expect(await store.create({ id, name: `p${id}` })).toEqual(expect.any(BigInt));
      for (const id of EDGE_IDS) {
        const plant = await store.get(id);
        expect(typeof plant?.id).toBe('bigint');
        expect(plant).toStrictEqual({ id, name: `p${id}`, version: expect.any(BigInt) });
      }
      // 2^53 and 2^53+1 are one float64: a lossy store would call the second a duplicate.
      expect(await store.create({ id: SAFE + 1n, name: 'again' })).toBe(false);
      expect(await store.get(SAFE - 2n)).toBeUndefined();
    });

    it('orders and pages by the exact int64 value', async () => {
      for (const id of shuffled(EDGE_IDS)) await store.create({ id, name: 'Fern' });
      const listed = (await store.list({ limit: 100 })).plants.map((plant) => plant.id);
      expect(listed).toStrictEqual(ascending(EDGE_IDS));
      expect((await store.list({ limit: 100, after: SAFE })).plants.map((plant) => plant.id)).toStrictEqual([
        SAFE + 1n,
        INT64_MAX - 1n,
        INT64_MAX,
      ]);
      expect(
        (await store.list({ limit: 100, after: INT64_MAX })).plants.map((plant) => plant.id),
      ).toStrictEqual([]);
      expect(
        (await store.list({ limit: 2, after: INT64_MIN })).plants.map((plant) => plant.id),
      ).toStrictEqual([INT64_MIN + 1n, -(SAFE + 1n)]);
    });
  });

  describe('list', () => {
    it('lists in ascending id order, strictly after the cursor, at most limit plants', async () => {
      const ids = [5n, -3n, 0n, 100n, 42n, -1000n, 6n];
      for (const id of shuffled(ids)) await store.create({ id, name: `p${id}`, tag: 't' });
      expect(unversioned(await store.list({ limit: 3 }))).toStrictEqual({
        plants: [
          { id: -1000n, name: 'p-1000', tag: 't' },
          { id: -3n, name: 'p-3', tag: 't' },
          { id: 0n, name: 'p0', tag: 't' },
        ],
        more: true,
      });
      expect((await store.list({ limit: 10, after: 0n })).plants.map((plant) => plant.id)).toStrictEqual([
        5n,
        6n,
        42n,
        100n,
      ]);
      // The cursor need not be a stored id.
      expect((await store.list({ limit: 10, after: 41n })).plants.map((plant) => plant.id)).toStrictEqual([
        42n,
        100n,
      ]);
      expect(unversioned(await store.list({ limit: 4, after: 0n }))).toStrictEqual({
        plants: [5n, 6n, 42n, 100n].map((id) => ({ id, name: `p${id}`, tag: 't' })),
        more: false,
      });
      expect(await store.list({ limit: 10, after: 100n })).toStrictEqual({ plants: [], more: false });
    });

    it('answers an empty list from an empty store', async () => {
      expect(await store.list({ limit: 10 })).toStrictEqual({ plants: [], more: false });
      expect(await store.list({ limit: 10, after: 0n })).toStrictEqual({ plants: [], more: false });
    });

    it('pages through every plant exactly once with the after cursor', async () => {
      const ids = Array.from({ length: 25 }, (_, i) => BigInt(i * 7 - 80));
      await Promise.all(ids.map((id) => store.create({ id, name: 'Fern' })));
      const seen: bigint[] = [];
      let after: bigint | undefined;
      for (let pages = 0; pages < 20; pages++) {
        const { plants, more } = await store.list(after === undefined ? { limit: 4 } : { limit: 4, after });
        expect(plants.length).toBe(more ? 4 : 1);
        seen.push(...plants.map((plant) => plant.id));
        if (!more) break;
        after = plants.at(-1)!.id;
      }
      expect(seen).toStrictEqual(ascending(ids));
    });

    it('ends a page early at its byte budget of name and tag text, never skipping a plant', async () => {
      // Bytes of name + tag in UTF-8: 'ü' is 2 bytes, '🌿' 4.
      const plants = [
        { id: 1n, name: 'a'.repeat(40), tag: 'ü'.repeat(10) }, // 60
        { id: 2n, name: '🌿'.repeat(10) }, // 40: 100 in all, exactly the budget
        { id: 3n, name: 'c' }, // 101: over
        { id: 4n, name: 'd'.repeat(250) }, // alone over the budget
        { id: 5n, name: 'e'.repeat(99), tag: '' }, // 99
        { id: 6n, name: 'f' }, // 100
      ];
      for (const plant of shuffled(plants)) expect(await store.create(plant)).toEqual(expect.any(BigInt));
      const page = async (after?: bigint) =>
        unversioned(await store.list({ limit: 10, after, maxBytes: 100 }));
      expect(await page()).toStrictEqual({ plants: plants.slice(0, 2), more: true });
      expect(await page(2n)).toStrictEqual({ plants: plants.slice(2, 3), more: true });
      // A plant larger than the whole budget still makes a page of its own.
      expect(await page(3n)).toStrictEqual({ plants: plants.slice(3, 4), more: true });
      expect(await page(4n)).toStrictEqual({ plants: plants.slice(4, 6), more: false });
      // `limit` still bounds a page whose text fits.
      expect(unversioned(await store.list({ limit: 1, after: 4n, maxBytes: 100 }))).toStrictEqual({
        plants: plants.slice(4, 5),
        more: true,
      });
    });

    it('holds a tag page to its byte budget too, counting only the plants of that tag', async () => {
      const plants = [
        { id: 1n, name: 'a'.repeat(50), tag: 't' }, // 51
        { id: 2n, name: 'x'.repeat(500), tag: 'u' }, // another tag's: not counted
        { id: 3n, name: 'b'.repeat(49), tag: 't' }, // 50: 101 with the first
        { id: 4n, name: 'c', tag: 't' }, // 2: 103 in all
      ];
      for (const plant of shuffled(plants)) await store.create(plant);
      const page = async (maxBytes: number, after?: bigint) =>
        unversioned(await store.list({ limit: 10, after, maxBytes, tag: 't' }));
      expect(await page(100)).toStrictEqual({ plants: [plants[0]], more: true });
      expect(await page(100, 1n)).toStrictEqual({ plants: [plants[2], plants[3]], more: false });
      expect(await page(103)).toStrictEqual({ plants: [plants[0], plants[2], plants[3]], more: false });
      expect(unversioned(await store.list({ limit: 2, tag: 't' }))).toStrictEqual({
        plants: [plants[0], plants[2]],
        more: true,
      });
    });

    it('holds a page of big rows to the default budget of 1 MiB', async () => {
      // 40 rows of 60,000 characters, as written before the length limits: 2.4 MB in all.
      const big = Array.from({ length: 40 }, (_, i) => ({ id: BigInt(i), name: `${i}`.padEnd(60_000, 'x') }));
      for (const plant of big) await store.create(plant);
      const seen: bigint[] = [];
      let after: bigint | undefined;
      for (let pages = 1; ; pages++) {
        const { plants, more } = await store.list({ limit: 1000, after });
        // 17 rows are 1,020,000 bytes; an 18th would pass 1,048,576.
        expect(plants.length).toBe(more ? 17 : 40 - 17 * 2);
        expect(plants.every((plant, i) => plant.name === big[seen.length + i]!.name)).toBe(true);
        seen.push(...plants.map((plant) => plant.id));
        if (!more) break;
        after = plants.at(-1)!.id;
        expect(pages).toBeLessThan(3);
      }
      expect(seen).toStrictEqual(big.map((plant) => plant.id));
    });
  });

  describe('concurrency', () => {
    it('lets exactly one of many concurrent creates of one id succeed, across two handles', async () => {
      // A second handle on the same database stands for a second instance (or process).
      const other = await open();
      try {
        const ids = [11n, INT64_MAX, INT64_MIN];
        const attempts = shuffled(
          ids.flatMap((id) => Array.from({ length: 12 }, (_, i) => ({ id, name: `n${i}`, via: i % 2 }))),
        );
        const results = await Promise.all(
          attempts.map(async (attempt) => ({
            ...attempt,
            created: await (attempt.via === 0 ? store : other).create({ id: attempt.id, name: attempt.name }),
          })),
        );
        for (const id of ids) {
          const winners = results.filter((result) => result.id === id && result.created);
          expect(winners).toHaveLength(1);
          // The stored plant is the one whose create answered true.
          expect(await store.get(id)).toStrictEqual({
            id,
            name: winners[0]!.name,
            version: expect.any(BigInt),
          });
          expect(await other.get(id)).toStrictEqual({
            id,
            name: winners[0]!.name,
            version: expect.any(BigInt),
          });
        }
        expect((await store.list({ limit: 10 })).plants.map((plant) => plant.id)).toStrictEqual(
          ascending(ids),
        );
      } finally {
        await other.close();
      }
    });

    it('answers every create of many concurrent distinct ids true, and holds them all', async () => {
      const ids = Array.from({ length: 200 }, (_, i) => SAFE + BigInt(i));
      const created = await Promise.all(ids.map((id) => store.create({ id, name: 'Fern' })));
      expect(created.every(Boolean)).toBe(true);
      expect((await store.list({ limit: 500 })).plants.map((plant) => plant.id)).toStrictEqual(ids);
    });
  });

  describe('ping and close', () => {
    it('answers ping while open', async () => {
      await expect(store.ping()).resolves.toBeUndefined();
    });

    it('finishes calls already made before closing, then rejects every call as unavailable', async () => {
      const pending = [store.create({ id: 1n, name: 'Fern' }), store.create({ id: 2n, name: 'Moss' })];
      const closed = store.close();
      await expect(Promise.all(pending)).resolves.toStrictEqual([expect.any(BigInt), expect.any(BigInt)]);
      await closed;
      // Closing again is harmless.
      await store.close();
      for (const call of [
        () => store.create({ id: 3n, name: 'Ivy' }),
        () => store.get(1n),
        () => store.list({ limit: 1 }),
        () => store.ping(),
        () => store.deliveries.claim({ url: 'http://127.0.0.1:9/a', limit: 1, leaseMs: 1_000 }),
        () => store.deliveries.pendingUrls({ limit: 1 }),
        () => store.deliveries.listFailed({ limit: 1 }),
        () => store.deliveries.depth({ cap: 1 }),
        () => store.deliveries.prune({ olderThanMs: 0, limit: 1 }),
      ]) {
        await expect(call()).rejects.toBeInstanceOf(StoreUnavailableError);
      }
      // What was acknowledged before close is there for the next opener.
      store = await open();
      expect(unversioned(await store.list({ limit: 10 })).plants).toStrictEqual([
        { id: 1n, name: 'Fern' },
        { id: 2n, name: 'Moss' },
      ]);
    });
  });
  describe('webhook outbox', () => {
    const SUBSCRIBERS = ['http://127.0.0.1:9/a', 'https://hooks.example/b?token=t'] as const;
    const [A, B] = SUBSCRIBERS;
    const FERN = '{"id":9223372036854775807,"name":"Fern","tag":"herb"}';
    const lease = { leaseMs: 60_000 };
    const claimA = (handle: PlantStore, limit = 10, leaseMs = lease.leaseMs) =>
      handle.deliveries.claim({ url: A, limit, leaseMs });
    const claimB = (handle: PlantStore, limit = 10, leaseMs = lease.leaseMs) =>
      handle.deliveries.claim({ url: B, limit, leaseMs });
    /** A create as the create operation makes it: with one delivery per subscriber. */
    const webhook = newPlantWebhook(SUBSCRIBERS);
    const create = (plant: NewPlant, handle = store) =>
      handle.create(plant, { outbox: { deliveries: webhook.deliveriesFor(plant) } });
    const delivery = (n: number, url: string): NewDelivery => ({
      id: `msg_${String(n).padStart(32, '0')}`,
      url,
      payload: `{"n":${n}}`,
    });

    it('claims for several subscribers in one call, each up to its limit, each delivery once', async () => {
      await store.create(
        { id: 1n, name: 'Fern' },
        { outbox: { deliveries: [delivery(1, A), delivery(2, B)] } },
      );
      await store.create(
        { id: 2n, name: 'Moss' },
        { outbox: { deliveries: [delivery(3, A), delivery(4, B)] } },
      );
      await store.create({ id: 3n, name: 'Ivy' }, { outbox: { deliveries: [delivery(5, A)] } });
      const ids = (claimed: { id: string }[][]) => claimed.map((each) => each.map((d) => d.id).sort());
      const first = await store.deliveries.claimEach(
        [
          { url: A, limit: 2 },
          { url: B, limit: 10 },
          { url: 'http://127.0.0.1:9/none', limit: 10 },
        ],
        lease.leaseMs,
      );
      expect(ids(first)).toStrictEqual([
        [delivery(1, A).id, delivery(3, A).id],
        [delivery(2, B).id, delivery(4, B).id],
        [],
      ]);
      expect(first[0]!.map((d) => d.attempts)).toStrictEqual([1, 1]);
      // Leased: a second call gets only what the first left.
      expect(
        ids(
          await store.deliveries.claimEach(
            [
              { url: B, limit: 10 },
              { url: A, limit: 10 },
            ],
            60_000,
          ),
        ),
      ).toStrictEqual([[], [delivery(5, A).id]]);
    });

    it('writes exactly the outbox rows a create is given, and none for a duplicate id', async () => {
      expect(
        await store.create(
          { id: 1n, name: 'Fern' },
          { outbox: { deliveries: [delivery(1, A), delivery(2, B), delivery(3, A)] } },
        ),
      ).toEqual(expect.any(BigInt));
      // The duplicate's plant and its rows are both refused.
      expect(
        await store.create(
          { id: 1n, name: 'Cactus' },
          { outbox: { deliveries: [delivery(4, A), delivery(5, B)] } },
        ),
      ).toBe(false);
      expect(await store.create({ id: 2n, name: 'Moss' })).toEqual(expect.any(BigInt));
      expect(await store.create({ id: 3n, name: 'Ivy' })).toEqual(expect.any(BigInt));
      expect(
        await store.create({ id: 4n, name: 'Rue' }, { outbox: { deliveries: [delivery(6, B)] } }),
      ).toEqual(expect.any(BigInt));
      expect(await store.get(1n)).toStrictEqual({ id: 1n, name: 'Fern', version: expect.any(BigInt) });
      expect(await store.deliveries.counts()).toStrictEqual({ pending: 4, delivered: 0, failed: 0 });
      const claimed = [...(await claimA(store)), ...(await claimB(store))]
        .map(({ id, url, payload, attempts }) => ({ id, url, payload, attempts }))
        .sort((x, y) => x.id.localeCompare(y.id));
      expect(claimed).toStrictEqual(
        [delivery(1, A), delivery(2, B), delivery(3, A), delivery(6, B)].map((row) => ({
          ...row,
          attempts: 1,
        })),
      );
    });

    it('enqueues the rows of exactly one of many concurrent creates of one id', async () => {
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          store.create(
            { id: 5n, name: `P${i}` },
            { outbox: { deliveries: [delivery(2 * i, A), delivery(2 * i + 1, B)] } },
          ),
        ),
      );
      expect(results.filter(Boolean)).toHaveLength(1);
      const winner = results.findIndex((result) => result !== false);
      expect(await store.get(5n)).toStrictEqual({ id: 5n, name: `P${winner}`, version: expect.any(BigInt) });
      const claimed = [...(await claimA(store)), ...(await claimB(store))].map((row) => row.id).sort();
      expect(claimed).toStrictEqual([delivery(2 * winner, A).id, delivery(2 * winner + 1, B).id]);
    });

    it('enqueues one delivery per subscriber with each create, exact payload, and nothing for a duplicate', async () => {
      expect(await create({ id: INT64_MAX, name: 'Fern', tag: 'herb' })).toEqual(expect.any(BigInt));
      expect(await create({ id: INT64_MAX, name: 'Cactus' })).toBe(false);
      expect(await create({ id: -1n, name: 'Moss' })).toEqual(expect.any(BigInt));
      expect(await store.deliveries.counts()).toStrictEqual({ pending: 4, delivered: 0, failed: 0 });
      expect(await store.deliveries.pendingUrls({ limit: 10 })).toStrictEqual([A, B]);

      const claimed = [...(await claimA(store)), ...(await claimB(store))];
      expect(claimed).toHaveLength(4);
      expect(new Set(claimed.map((delivery) => delivery.id)).size).toBe(4);
      for (const delivery of claimed) {
        expect(delivery.id).toMatch(/^msg_[0-9a-f]{32}$/);
        expect(delivery.attempts).toBe(1);
        expect(Math.abs(delivery.createdAt.getTime() - Date.now())).toBeLessThan(60_000);
      }
      // Which deliveries a claim leases is ordered (oldest due first); the order it returns them in is not.
      const byUrlAndPayload = claimed
        .map(({ url, payload }) => `${url} ${payload}`)
        .sort((x, y) => x.localeCompare(y));
      expect(byUrlAndPayload).toStrictEqual([
        `${A} {"id":-1,"name":"Moss"}`,
        `${A} ${FERN}`,
        `${B} {"id":-1,"name":"Moss"}`,
        `${B} ${FERN}`,
      ]);
    });

    it('claims one subscriber at a time: a backlog for one never stands in front of another', async () => {
      await Promise.all(Array.from({ length: 30 }, (_, i) => create({ id: BigInt(i), name: 'Fern' })));
      // A's whole backlog leased (e.g. to a subscriber that never answers), B's still there in full.
      expect(await claimA(store, 100)).toHaveLength(30);
      expect(await claimA(store, 100)).toStrictEqual([]);
      const b = await claimB(store, 4);
      expect(b.map((delivery) => delivery.url)).toStrictEqual([B, B, B, B]);
      expect(await claimB(store, 100)).toHaveLength(26);
      expect(
        await store.deliveries.claim({ url: 'http://127.0.0.1:9/other', limit: 10, ...lease }),
      ).toStrictEqual([]);
    });

    it('lists the URLs with pending deliveries, due or not, and only those', async () => {
      expect(await store.deliveries.pendingUrls({ limit: 10 })).toStrictEqual([]);
      expect(await create({ id: 1n, name: 'Fern' })).toEqual(expect.any(BigInt));
      expect(await store.deliveries.pendingUrls({ limit: 1 })).toStrictEqual([A]);
      const [a] = await claimA(store);
      // Leased (not due) is still pending.
      expect(await store.deliveries.pendingUrls({ limit: 10 })).toStrictEqual([A, B]);
      await store.deliveries.markDelivered([a!.id]);
      const [b] = await claimB(store);
      await store.deliveries.markFailed(b!.id, 'HTTP 500');
      expect(await store.deliveries.pendingUrls({ limit: 10 })).toStrictEqual([]);
    });

    it('enqueues nothing for a create without outbox rows, and keeps deliveries across reopening', async () => {
      expect(await create({ id: 1n, name: 'Fern' })).toEqual(expect.any(BigInt));
      await store.close();
      store = await open();
      expect(await store.create({ id: 2n, name: 'Moss' })).toEqual(expect.any(BigInt));
      expect(await create({ id: 2n, name: 'Moss' })).toBe(false);
      expect(await store.deliveries.counts()).toStrictEqual({ pending: 2, delivered: 0, failed: 0 });
      const claimed = [...(await claimA(store)), ...(await claimB(store))];
      expect(claimed.map((delivery) => delivery.payload)).toStrictEqual([
        '{"id":1,"name":"Fern"}',
        '{"id":1,"name":"Fern"}',
      ]);
    });

    it('hides a claimed delivery from every claim until its lease ends, then hands it out again', async () => {
      const other = await open();
      try {
        expect(await create({ id: 1n, name: 'Fern' })).toEqual(expect.any(BigInt));
        expect(await create({ id: 2n, name: 'Moss' })).toEqual(expect.any(BigInt));
        const [first] = await claimA(store, 1, 300);
        const [second, ...none] = await claimA(other);
        expect(none).toStrictEqual([]);
        expect(second!.id).not.toBe(first!.id);
        expect(await claimA(store)).toStrictEqual([]);
        await sleep(400);
        // The first lease ran out (its worker died, say): claimable again, the attempt counted.
        const again = await claimA(other);
        expect(again).toStrictEqual([{ ...first!, attempts: 2 }]);
      } finally {
        await other.close();
      }
    });

    it('records outcomes: delivered is final, retry waits its delay, failed is listed with its last error', async () => {
      expect(await create({ id: 3n, name: 'Ivy' })).toEqual(expect.any(BigInt));
      const [a] = await claimA(store);
      const [b] = await claimB(store);
      await store.deliveries.markDelivered([a!.id]);
      await store.deliveries.retry(b!.id, { delayMs: 300, error: 'HTTP 500' });
      expect(await claimB(store)).toStrictEqual([]);
      await sleep(400);
      const [retried, ...rest] = await claimB(store);
      expect(rest).toStrictEqual([]);
      expect(retried).toStrictEqual({ ...b!, attempts: 2 });
      await store.deliveries.markFailed(b!.id, 'no answer within 1000 ms');

      const failed = await store.deliveries.listFailed({ limit: 10 });
      expect(failed).toStrictEqual([
        { ...b!, attempts: 2, lastError: 'no answer within 1000 ms', failedAt: expect.any(Date) },
      ]);
      // Late outcomes (from a worker whose lease ran out) change nothing once settled.
      await store.deliveries.retry(a!.id, { delayMs: 0, error: 'late' });
      await store.deliveries.markDelivered([b!.id]);
      expect([...(await claimA(store)), ...(await claimB(store))]).toStrictEqual([]);
      expect(await store.deliveries.counts()).toStrictEqual({ pending: 0, delivered: 1, failed: 1 });
      expect(await store.deliveries.listFailed({ limit: 10 })).toStrictEqual(failed);
    });

    it('marks many deliveries delivered in one call, and none that is no longer pending', async () => {
      await Promise.all(Array.from({ length: 4 }, (_, i) => create({ id: BigInt(i), name: 'Fern' })));
      const [first, second, third, fourth] = await claimA(store);
      await store.deliveries.markFailed(fourth!.id, 'HTTP 500');
      await store.deliveries.markDelivered([first!.id, second!.id, fourth!.id, 'msg_unknown']);
      await store.deliveries.markDelivered([]);
      expect(await store.deliveries.counts()).toStrictEqual({ pending: 5, delivered: 2, failed: 1 });
      expect((await store.deliveries.listFailed({ limit: 10 })).map((delivery) => delivery.id)).toStrictEqual(
        [fourth!.id],
      );
      // The third is still leased: not due, not settled.
      expect(await claimA(store)).toStrictEqual([]);
      await store.deliveries.markDelivered([third!.id]);
      expect(await store.deliveries.counts()).toStrictEqual({ pending: 4, delivered: 3, failed: 1 });
    });

    it('releases claimed deliveries unattempted: due at once, the attempt uncounted, unless claimed again since', async () => {
      expect(await create({ id: 1n, name: 'Fern' })).toEqual(expect.any(BigInt));
      expect(await create({ id: 2n, name: 'Moss' })).toEqual(expect.any(BigInt));
      const [first, second] = await claimA(store, 10, 300);
      expect([first!.attempts, second!.attempts]).toStrictEqual([1, 1]);
      await store.deliveries.release([first!]);
      await store.deliveries.release([]);
      // Due again at once, as if never claimed.
      const again = await claimA(store);
      expect(again).toStrictEqual([{ ...first!, attempts: 1 }]);
      // The second's lease runs out and another claim takes it: the old claim's release is stale.
      await sleep(400);
      const [retaken, ...rest] = await claimA(store);
      expect(rest).toStrictEqual([]);
      expect(retaken).toStrictEqual({ ...second!, attempts: 2 });
      await store.deliveries.release([second!]);
      expect(await claimA(store)).toStrictEqual([]);
      // A settled delivery is never released back into the queue.
      await store.deliveries.markDelivered([again[0]!.id]);
      await store.deliveries.release([again[0]!]);
      expect(await store.deliveries.counts()).toStrictEqual({ pending: 3, delivered: 1, failed: 0 });
      expect(await claimA(store)).toStrictEqual([]);
      await store.deliveries.release([retaken!]);
      expect(await claimA(store)).toStrictEqual([{ ...second!, attempts: 2 }]);
    });

    it('counts pending and failed deliveries for metrics, each only up to the cap', async () => {
      await Promise.all(Array.from({ length: 5 }, (_, i) => create({ id: BigInt(i), name: 'Fern' })));
      for (const delivery of await claimA(store, 3))
        await store.deliveries.markFailed(delivery.id, 'HTTP 500');
      for (const delivery of await claimA(store, 1)) await store.deliveries.markDelivered([delivery.id]);
      expect(await store.deliveries.depth({ cap: 100 })).toStrictEqual({ pending: 6, failed: 3 });
      expect(await store.deliveries.depth({ cap: 4 })).toStrictEqual({ pending: 4, failed: 3 });
      expect(await store.deliveries.depth({ cap: 2 })).toStrictEqual({ pending: 2, failed: 2 });
      expect(await store.deliveries.counts()).toStrictEqual({ pending: 6, delivered: 1, failed: 3 });
    });

    it('prunes delivered deliveries older than the retention, oldest first, at most `limit` at a time', async () => {
      await Promise.all(Array.from({ length: 5 }, (_, i) => create({ id: BigInt(i), name: 'Fern' })));
      const delivered = await claimA(store);
      await store.deliveries.markDelivered(delivered.map((delivery) => delivery.id));
      const [failed, pending] = await claimB(store, 2);
      await store.deliveries.markFailed(failed!.id, 'HTTP 500');
      await store.deliveries.retry(pending!.id, { delayMs: 0, error: 'HTTP 500' });
      // Not yet past a retention of a minute.
      expect(await store.deliveries.prune({ olderThanMs: 60_000, limit: 100 })).toBe(0);
      await sleep(50);
      expect(await store.deliveries.prune({ olderThanMs: 20, limit: 2 })).toBe(2);
      expect(await store.deliveries.counts()).toStrictEqual({ pending: 4, delivered: 3, failed: 1 });
      expect(await store.deliveries.prune({ olderThanMs: 20, limit: 100 })).toBe(3);
      expect(await store.deliveries.prune({ olderThanMs: 0, limit: 100 })).toBe(0);
      // Failed deliveries are kept (listed by `webhooks failed`), pending ones untouched.
      expect(await store.deliveries.counts()).toStrictEqual({ pending: 4, delivered: 0, failed: 1 });
      expect((await store.deliveries.listFailed({ limit: 10 })).map((delivery) => delivery.id)).toStrictEqual(
        [failed!.id],
      );
      expect(await claimB(store)).toHaveLength(4);
    });

    it('prunes failed deliveries by the time they failed, oldest first, at most `limit` at a time, and nothing else', async () => {
      await Promise.all(Array.from({ length: 6 }, (_, i) => create({ id: BigInt(i), name: 'Fern' })));
      const [early, ...rest] = await claimA(store);
      await store.deliveries.markFailed(early!.id, 'HTTP 500');
      // Margins wide enough for a loaded 2-core machine (40 ms of 60 were not).
      await sleep(1_000);
      // Failed later: not yet past a retention measured from their failure, though enqueued as early.
      for (const delivery of rest.slice(0, 3)) await store.deliveries.markFailed(delivery.id, 'HTTP 500');
      const delivered = await claimB(store);
      await store.deliveries.markDelivered(delivered.map((delivery) => delivery.id));
      expect(await store.deliveries.counts()).toStrictEqual({ pending: 2, delivered: 6, failed: 4 });

      expect(await store.deliveries.pruneFailed({ olderThanMs: 60_000, limit: 100 })).toBe(0);
      expect(await store.deliveries.pruneFailed({ olderThanMs: 500, limit: 100 })).toBe(1);
      const kept = (await store.deliveries.listFailed({ limit: 10 })).map((delivery) => delivery.id);
      expect(kept.sort()).toStrictEqual(
        rest
          .slice(0, 3)
          .map((delivery) => delivery.id)
          .sort(),
      );
      await sleep(60);
      expect(await store.deliveries.pruneFailed({ olderThanMs: 40, limit: 2 })).toBe(2);
      expect(await store.deliveries.pruneFailed({ olderThanMs: 40, limit: 100 })).toBe(1);
      expect(await store.deliveries.pruneFailed({ olderThanMs: 0, limit: 100 })).toBe(0);
      // Delivered and pending rows are left to their own rules.
      expect(await store.deliveries.counts()).toStrictEqual({ pending: 2, delivered: 6, failed: 0 });
    });

    it('never hands one delivery to two claims at once, across two handles', async () => {
      const other = await open();
      try {
        await Promise.all(Array.from({ length: 30 }, (_, i) => create({ id: BigInt(i), name: 'Fern' })));
        const seen: string[] = [];
        for (let round = 0; round < 50; round++) {
          const batches = await Promise.all(
            [store, other, store, other].flatMap((handle) => [claimA(handle, 4), claimB(handle, 4)]),
          );
          const ids = batches.flat().map((delivery) => delivery.id);
          if (ids.length === 0) break;
          seen.push(...ids);
        }
        expect(seen).toHaveLength(60);
        expect(new Set(seen).size).toBe(60);
      } finally {
        await other.close();
      }
    });
  });

  describe('webhook endpoints', () => {
    const endpoint = (n: number, owner = 'alice') => ({
      id: `we_${String(n).padStart(24, '0')}`,
      owner,
      url: `http://127.0.0.1:9/${n}`,
      description: n % 2 === 0 ? null : `endpoint ${n}`,
      secret: `sealed-${n}`,
    });
    const max = { maxPerOwner: 3 };
    /** Room for any number of pending deliveries in these tests. */
    const ROOM = { maxPending: 1_000 };

    it('registers up to the limit per owner, and reads only the owner’s (any owner’s without one)', async () => {
      for (const n of [1, 2, 3])
        expect(await store.webhookEndpoints.create(endpoint(n), max)).toMatchObject({ id: endpoint(n).id });
      expect(await store.webhookEndpoints.create(endpoint(4), max)).toBe(false);
      expect(await store.webhookEndpoints.create(endpoint(5, 'bob'), max)).toMatchObject({ owner: 'bob' });
      const listed = await store.webhookEndpoints.list('alice');
      expect(listed.map((e) => e.id)).toStrictEqual([1, 2, 3].map((n) => endpoint(n).id));
      expect(listed[0]).toMatchObject({
        url: 'http://127.0.0.1:9/1',
        description: 'endpoint 1',
        secret: 'sealed-1',
        previousSecret: null,
        previousSecretExpiresAt: null,
      });
      expect(Math.abs(listed[0]!.createdAt.getTime() - Date.now())).toBeLessThan(60_000);
      expect(await store.webhookEndpoints.get(endpoint(1).id, 'bob')).toBeUndefined();
      expect((await store.webhookEndpoints.get(endpoint(1).id, 'alice'))?.id).toBe(endpoint(1).id);
      expect((await store.webhookEndpoints.get(endpoint(1).id))?.owner).toBe('alice');
      expect(await store.webhookEndpoints.list('carol')).toStrictEqual([]);
    });

    it('rotates: the current secret becomes the previous until the overlap ends; a second rotation drops the oldest', async () => {
      await store.webhookEndpoints.create(endpoint(1), max);
      expect(
        await store.webhookEndpoints.rotate(endpoint(1).id, 'bob', { secret: 'x', overlapMs: 1_000 }),
      ).toBeUndefined();
      const first = await store.webhookEndpoints.rotate(endpoint(1).id, 'alice', {
        secret: 'sealed-1b',
        overlapMs: 60_000,
      });
      expect(first).toMatchObject({ secret: 'sealed-1b', previousSecret: 'sealed-1' });
      const until = first!.previousSecretExpiresAt!.getTime() - Date.now();
      expect(until).toBeGreaterThan(50_000);
      expect(until).toBeLessThan(70_000);
      const second = await store.webhookEndpoints.rotate(endpoint(1).id, 'alice', {
        secret: 'sealed-1c',
        overlapMs: 60_000,
      });
      expect(second).toMatchObject({ secret: 'sealed-1c', previousSecret: 'sealed-1b' });
      expect(JSON.stringify(await store.webhookEndpoints.get(endpoint(1).id))).not.toContain('sealed-1"');
    });

    const OPERATOR_URL = 'http://127.0.0.1:9/operator';
    /** Creates that fan out to every endpoint registered, and each to OPERATOR_URL. */
    const createFannedOut = async (ids: bigint[]) => {
      for (const id of ids)
        await store.create(
          { id, name: 'Fern' },
          {
            outbox: {
              endpointPayload: `{"id":${id}}`,
              deliveries: [
                { id: `msg_${String(id).padStart(32, '0')}`, url: OPERATOR_URL, payload: `{"id":${id}}` },
              ],
            },
          },
        );
    };

    it('claims for many endpoints and URLs in one call: each its own, its oldest up to its limit, once', async () => {
      const ids = [1, 2, 3].map((n) => endpoint(n).id);
      for (const n of [1, 2, 3]) await store.webhookEndpoints.create(endpoint(n), max);
      await createFannedOut([1n, 2n, 3n]);
      const payloads = (claimed: { payload: string }[][]) =>
        claimed.map((each) => each.map((d) => d.payload).sort());
      const first = await store.deliveries.claimEach(
        [
          { endpointId: ids[1]!, limit: 2 },
          { url: OPERATOR_URL, limit: 1 },
          { endpointId: ids[0]!, limit: 10 },
          { endpointId: 'we_none', limit: 10 },
        ],
        60_000,
      );
      expect(payloads(first)).toStrictEqual([
        ['{"id":1}', '{"id":2}'],
        ['{"id":1}'],
        ['{"id":1}', '{"id":2}', '{"id":3}'],
        [],
      ]);
      expect(first[0]!.every((d) => d.endpoint?.id === ids[1] && d.attempts === 1)).toBe(true);
      expect(first[2]!.every((d) => d.endpoint?.id === ids[0])).toBe(true);
      // Leased: the next call gets what the first left, and endpoint 3's, untouched by the first.
      expect(
        payloads(
          await store.deliveries.claimEach(
            [
              { endpointId: ids[0]!, limit: 10 },
              { endpointId: ids[1]!, limit: 10 },
              { endpointId: ids[2]!, limit: 10 },
              { url: OPERATOR_URL, limit: 10 },
            ],
            60_000,
          ),
        ),
      ).toStrictEqual([[], ['{"id":3}'], ['{"id":1}', '{"id":2}', '{"id":3}'], ['{"id":2}', '{"id":3}']]);
    });

    it('expires the named subscribers’ deliveries due longer than `olderThanMs`, none leased or retried since, at most `limit`', async () => {
      const [e1, e2] = [1, 2].map((n) => endpoint(n).id);
      for (const n of [1, 2]) await store.webhookEndpoints.create(endpoint(n), max);
      await createFannedOut([1n, 2n, 3n]);
      const [leased] = (await store.deliveries.claimEach([{ endpointId: e1!, limit: 1 }], 60_000))[0]!;
      // The others due 1 s ago; the retried one due again from now, for less than `olderThanMs`
      // (800 ms) while the calls below run, however loaded the machine (at 200, a CI run's took longer).
      await sleep(1_000);
      const [retried] = await store.deliveries.claim({ url: OPERATOR_URL, limit: 1, leaseMs: 60_000 });
      await store.deliveries.retry(retried!.id, { delayMs: 0, error: 'HTTP 500' });
      const expire = (olderThanMs: number, limit: number) =>
        store.deliveries.expire({
          endpointIds: [e1!],
          urls: [OPERATOR_URL],
          olderThanMs,
          limit,
          error: 'expired',
        });
      expect(await expire(60_000, 100)).toStrictEqual([]);
      expect(await expire(800, 3)).toStrictEqual([
        { endpointId: e1 },
        { endpointId: e1 },
        { url: OPERATOR_URL },
      ]);
      expect(await expire(800, 100)).toStrictEqual([{ url: OPERATOR_URL }]);
      expect(await expire(800, 100)).toStrictEqual([]);
      expect(await store.deliveries.counts()).toStrictEqual({ pending: 5, delivered: 0, failed: 4 });
      const failed = await store.deliveries.listFailed({ limit: 10 });
      // Never attempted: their attempts unspent, the reason recorded.
      expect(failed.map((d) => [d.lastError, d.attempts])).toStrictEqual(Array(4).fill(['expired', 0]));
      expect(failed.map((d) => d.id)).not.toContain(leased!.id);
      // The one leased and the one retried are still pending, and e2, not named, keeps all of its own.
      await store.deliveries.markDelivered([leased!.id]);
      const [mine] = await store.deliveries.claimEach([{ endpointId: e2!, limit: 10 }], 60_000);
      expect(mine).toHaveLength(3);
      expect(await store.deliveries.claim({ url: OPERATOR_URL, limit: 10, leaseMs: 60_000 })).toStrictEqual([
        { ...retried!, attempts: 2 },
      ]);
    });

    it('reads many endpoints by id in one call: those that exist, whoever owns them, as get reads each', async () => {
      for (const [n, owner] of [
        [1, 'alice'],
        [2, 'alice'],
        [3, 'bob'],
      ] as const)
        await store.webhookEndpoints.create(endpoint(n, owner), max);
      const ids = [1, 2, 3, 4].map((n) => endpoint(n).id);
      const read = await store.webhookEndpoints.getMany(ids);
      expect([...read.keys()].sort()).toStrictEqual(ids.slice(0, 3));
      for (const id of ids.slice(0, 3))
        expect(read.get(id)).toStrictEqual(await store.webhookEndpoints.get(id));
      expect(await store.webhookEndpoints.getMany([])).toStrictEqual(new Map());
    });

    it('fans a create out to every endpoint in its transaction, none for a duplicate; claims, lists and deletes per endpoint', async () => {
      for (const n of [1, 2]) await store.webhookEndpoints.create(endpoint(n), max);
      expect(
        await store.create(
          { id: 1n, name: 'Fern' },
          { outbox: { endpointPayload: '{"id":1,"name":"Fern"}' } },
        ),
      ).toEqual(expect.any(BigInt));
      expect(
        await store.create(
          { id: 1n, name: 'Moss' },
          { outbox: { endpointPayload: '{"id":1,"name":"Moss"}' } },
        ),
      ).toBe(false);
      expect(await store.create({ id: 2n, name: 'Ivy' })).toEqual(expect.any(BigInt));
      expect(await store.deliveries.pendingEndpoints({ limit: 10 })).toStrictEqual([
        endpoint(1).id,
        endpoint(2).id,
      ]);
      // Operator claims and URLs never see endpoint deliveries.
      expect(await store.deliveries.pendingUrls({ limit: 10 })).toStrictEqual([]);
      expect(
        await store.deliveries.claim({ url: 'http://127.0.0.1:9/1', limit: 10, leaseMs: 60_000 }),
      ).toStrictEqual([]);
      const [claimed, ...none] = await store.deliveries.claim({
        endpointId: endpoint(1).id,
        limit: 10,
        leaseMs: 60_000,
      });
      expect(none).toStrictEqual([]);
      expect(claimed).toMatchObject({
        url: 'http://127.0.0.1:9/1',
        payload: '{"id":1,"name":"Fern"}',
        attempts: 1,
        endpoint: { id: endpoint(1).id, event: 'plant.created' },
      });
      expect(claimed!.id).toMatch(/^msg_[0-9a-f]{32}$/);
      // Time-ordered, as the api's own ids (newWebhookId): the outbox's key grows at its end.
      const idTime = Number.parseInt(claimed!.id.slice(4, 16), 16);
      expect(Math.abs(idTime - claimed!.createdAt.getTime())).toBeLessThanOrEqual(1);
      await store.deliveries.markFailed(claimed!.id, 'HTTP 410', 410);
      const ping = (await store.deliveries.enqueue(
        {
          id: `msg_${'1'.repeat(32)}`,
          endpointId: endpoint(1).id,
          url: 'http://127.0.0.1:9/1',
          event: 'webhook.ping',
          payload: '{}',
        },
        ROOM,
      )) as EndpointDelivery;
      expect(ping).toMatchObject({
        event: 'webhook.ping',
        status: 'pending',
        attempts: 0,
        lastResponseCode: null,
      });
      const page = await store.deliveries.listForEndpoint({ endpointId: endpoint(1).id, limit: 1 });
      expect(page!.deliveries.map((d) => d.id)).toStrictEqual([ping.id]);
      expect(page!.more).toBe(true);
      const rest = await store.deliveries.listForEndpoint({
        endpointId: endpoint(1).id,
        limit: 10,
        before: ping.id,
      });
      expect(rest).toMatchObject({
        deliveries: [
          {
            id: claimed!.id,
            status: 'failed',
            attempts: 1,
            lastResponseCode: 410,
            lastError: 'HTTP 410',
            nextAttemptAt: null,
          },
        ],
        more: false,
      });
      // `before` must be a delivery of this endpoint.
      expect(
        await store.deliveries.listForEndpoint({ endpointId: endpoint(2).id, limit: 10, before: ping.id }),
      ).toBeUndefined();
      expect(
        await store.deliveries.redeliver({ id: claimed!.id, endpointId: endpoint(2).id, ...ROOM }),
      ).toBeUndefined();
      expect(
        await store.deliveries.redeliver({ id: claimed!.id, endpointId: endpoint(1).id, ...ROOM }),
      ).toMatchObject({
        status: 'pending',
        attempts: 0,
        lastResponseCode: null,
        lastError: null,
      });
      expect(await store.webhookEndpoints.summaries({})).toMatchObject([
        { id: endpoint(1).id, owner: 'alice', pending: 2, failed: 0 },
        { id: endpoint(2).id, pending: 1, failed: 0 },
      ]);
      expect(await store.webhookEndpoints.delete(endpoint(1).id, 'bob')).toBe(false);
      expect(await store.webhookEndpoints.delete(endpoint(1).id, 'alice')).toBe(true);
      expect(await store.webhookEndpoints.delete(endpoint(1).id, 'alice')).toBe(false);
      expect(await store.deliveries.listForEndpoint({ endpointId: endpoint(1).id, limit: 10 })).toStrictEqual(
        {
          deliveries: [],
          more: false,
        },
      );
      expect(await store.deliveries.pendingEndpoints({ limit: 10 })).toStrictEqual([endpoint(2).id]);
    });

    it('caps pending deliveries per endpoint for enqueue and redeliver, counting only that endpoint’s pending ones', async () => {
      await store.webhookEndpoints.create(endpoint(1), max);
      await store.webhookEndpoints.create(endpoint(2), max);
      const ping = (n: number, endpointId = endpoint(1).id) =>
        store.deliveries.enqueue(
          {
            id: `msg_${String(n).padStart(32, '0')}`,
            endpointId,
            url: 'http://127.0.0.1:9/1',
            event: 'webhook.ping',
            payload: '{}',
          },
          { maxPending: 3 },
        );
      const first = (await ping(1)) as EndpointDelivery;
      expect(first).toMatchObject({ status: 'pending' });
      expect(await ping(2)).toMatchObject({ status: 'pending' });
      // A create's fan-out is not capped: the third pending row comes from a create.
      expect(
        await store.create({ id: 1n, name: 'Fern' }, { outbox: { endpointPayload: '{"id":1}' } }),
      ).toEqual(expect.any(BigInt));
      expect(await ping(3)).toBe('full');
      // The other endpoint has its own count.
      expect(await ping(4, endpoint(2).id)).toMatchObject({ status: 'pending' });
      expect(
        await store.deliveries.redeliver({ id: first.id, endpointId: endpoint(1).id, maxPending: 3 }),
      ).toBe('full');
      // An unknown delivery is unknown (404), whatever the count.
      expect(
        await store.deliveries.redeliver({ id: 'msg_nope', endpointId: endpoint(1).id, maxPending: 3 }),
      ).toBeUndefined();
      // Once one is no longer pending there is room again, for one.
      const [claimed] = await store.deliveries.claim({
        endpointId: endpoint(1).id,
        limit: 1,
        leaseMs: 60_000,
      });
      await store.deliveries.markFailed(claimed!.id, 'HTTP 500', 500);
      expect(
        await store.deliveries.redeliver({ id: claimed!.id, endpointId: endpoint(1).id, maxPending: 3 }),
      ).toMatchObject({ id: claimed!.id, status: 'pending', attempts: 0 });
      expect(await ping(5)).toBe('full');
      const rows = await instance.rows(
        `SELECT endpoint_id, count(*) AS n FROM webhook_deliveries WHERE status = 'pending' GROUP BY endpoint_id ORDER BY endpoint_id`,
      );
      expect(rows.map((row) => [row.endpoint_id, Number(row.n)])).toStrictEqual([
        [endpoint(1).id, 3],
        [endpoint(2).id, 2],
      ]);
    });

    it('never passes the pending cap with concurrent pings and redeliveries, across two handles', async () => {
      await store.webhookEndpoints.create(endpoint(1), max);
      const other = await open();
      try {
        const failed: string[] = [];
        for (let n = 0; n < 10; n++) {
          const id = `msg_${String(100 + n).padStart(32, '0')}`;
          await store.deliveries.enqueue(
            {
              id,
              endpointId: endpoint(1).id,
              url: 'http://127.0.0.1:9/1',
              event: 'webhook.ping',
              payload: '{}',
            },
            ROOM,
          );
          failed.push(id);
        }
        for (const delivery of await store.deliveries.claim({
          endpointId: endpoint(1).id,
          limit: 10,
          leaseMs: 60_000,
        }))
          await store.deliveries.markFailed(delivery.id, 'HTTP 500');
        // 20 pings and a redelivery of each failed delivery, alternating between the handles.
        const outcomes = await Promise.all(
          Array.from({ length: 30 }, (_, n) => {
            const handle = n % 2 === 0 ? store : other;
            return n < 20
              ? handle.deliveries.enqueue(
                  {
                    id: `msg_${String(n).padStart(32, '0')}`,
                    endpointId: endpoint(1).id,
                    url: 'http://127.0.0.1:9/1',
                    event: 'webhook.ping',
                    payload: '{}',
                  },
                  { maxPending: 7 },
                )
              : handle.deliveries.redeliver({
                  id: failed[n - 20]!,
                  endpointId: endpoint(1).id,
                  maxPending: 7,
                });
          }),
        );
        expect(outcomes.filter((outcome) => outcome !== 'full' && outcome !== undefined)).toHaveLength(7);
        const [{ n }] = (await instance.rows(
          `SELECT count(*) AS n FROM webhook_deliveries WHERE status = 'pending'`,
        )) as [{ n: unknown }];
        expect(Number(n)).toBe(7);
      } finally {
        await other.close();
      }
    });

    it('lists an endpoint’s deliveries newest first in the order they were enqueued, even within one millisecond', async () => {
      await store.webhookEndpoints.create(endpoint(2), max);
      const ids: string[] = [];
      for (let i = 0; i < 12; i++) {
        const id = `msg_${randomBytes(16).toString('hex')}`;
        await store.deliveries.enqueue(
          {
            id,
            endpointId: endpoint(2).id,
            url: 'http://127.0.0.1:9/2',
            event: 'webhook.ping',
            payload: '{}',
          },
          ROOM,
        );
        ids.push(id);
      }
      const newestFirst = [...ids].reverse();
      const listed: string[] = [];
      let before: string | undefined;
      for (;;) {
        const page = await store.deliveries.listForEndpoint({ endpointId: endpoint(2).id, limit: 5, before });
        listed.push(...page!.deliveries.map((d) => d.id));
        if (!page!.more) break;
        before = listed.at(-1);
      }
      expect(listed).toStrictEqual(newestFirst);
    });

    /** The endpoint's deliveries as the owner lists them, oldest first: status and last error. */
    const outcomes = async (n: number) =>
      (await store.deliveries.listForEndpoint({ endpointId: endpoint(n).id, limit: 100 }))!.deliveries
        .map(({ status, lastError }) => ({ status, lastError }))
        .reverse();

    it('disables an endpoint: its pending deliveries fail, create fans out to it no more, a second disable keeps the first reason', async () => {
      for (const n of [1, 2]) await store.webhookEndpoints.create(endpoint(n), max);
      expect((await store.webhookEndpoints.get(endpoint(1).id))!.disabled).toBeNull();
      expect(
        await store.create({ id: 1n, name: 'Fern' }, { outbox: { endpointPayload: '{"id":1}' } }),
      ).toEqual(expect.any(BigInt));
      const [delivered] = await store.deliveries.claim({
        endpointId: endpoint(1).id,
        limit: 1,
        leaseMs: 60_000,
      });
      await store.deliveries.markDelivered([delivered!.id], [200]);
      expect(
        await store.create({ id: 2n, name: 'Moss' }, { outbox: { endpointPayload: '{"id":2}' } }),
      ).toEqual(expect.any(BigInt));

      const disabled = await store.webhookEndpoints.disable(endpoint(1).id, 'operator');
      expect(disabled!.disabled).toStrictEqual({ at: expect.any(Date), reason: 'operator' });
      expect(Math.abs(disabled!.disabled!.at.getTime() - Date.now())).toBeLessThan(60_000);
      expect(await outcomes(1)).toStrictEqual([
        { status: 'delivered', lastError: null },
        { status: 'failed', lastError: 'endpoint disabled (operator)' },
      ]);
      expect(await store.deliveries.pendingEndpoints({ limit: 10 })).toStrictEqual([endpoint(2).id]);
      expect(
        await store.create({ id: 3n, name: 'Ivy' }, { outbox: { endpointPayload: '{"id":3}' } }),
      ).toEqual(expect.any(BigInt));
      expect(await outcomes(1)).toHaveLength(2);
      expect(await outcomes(2)).toHaveLength(3);
      // Read back by every reader, the listing included.
      expect((await store.webhookEndpoints.get(endpoint(1).id, 'alice'))!.disabled).toStrictEqual(
        disabled!.disabled,
      );
      expect(
        (await store.webhookEndpoints.list('alice')).map((e) => e.disabled?.reason ?? null),
      ).toStrictEqual(['operator', null]);
      expect(await store.webhookEndpoints.summaries({ owner: 'alice' })).toMatchObject([
        { id: endpoint(1).id, disabled: { reason: 'operator' }, pending: 0, failed: 1 },
        { id: endpoint(2).id, disabled: null, pending: 3, failed: 0 },
      ]);

      // A delivery enqueued anyway (a ping, a create that raced the disabling) is failed by the
      // next disable, which keeps the first time and reason.
      await store.deliveries.enqueue(
        {
          id: `msg_${'4'.repeat(32)}`,
          endpointId: endpoint(1).id,
          url: endpoint(1).url,
          event: 'webhook.ping',
          payload: '{}',
        },
        ROOM,
      );
      const again = await store.webhookEndpoints.disable(endpoint(1).id, 'token_inactive');
      expect(again!.disabled).toStrictEqual(disabled!.disabled);
      expect((await outcomes(1)).at(-1)).toStrictEqual({
        status: 'failed',
        lastError: 'endpoint disabled (operator)',
      });
      expect(await store.webhookEndpoints.disable(endpoint(9).id, 'operator')).toBeUndefined();
    });

    it('enables a disabled endpoint: new plants fan out to it again, its failed deliveries stay failed', async () => {
      await store.webhookEndpoints.create(endpoint(1), max);
      expect(
        await store.create({ id: 1n, name: 'Fern' }, { outbox: { endpointPayload: '{"id":1}' } }),
      ).toEqual(expect.any(BigInt));
      await store.webhookEndpoints.disable(endpoint(1).id, 'token_lacks_read');
      const enabled = await store.webhookEndpoints.enable(endpoint(1).id);
      expect(enabled).toMatchObject({ id: endpoint(1).id, disabled: null });
      expect(
        await store.create({ id: 2n, name: 'Moss' }, { outbox: { endpointPayload: '{"id":2}' } }),
      ).toEqual(expect.any(BigInt));
      expect(await outcomes(1)).toStrictEqual([
        { status: 'failed', lastError: 'endpoint disabled (token_lacks_read)' },
        { status: 'pending', lastError: null },
      ]);
      expect(await store.webhookEndpoints.enable(endpoint(9).id)).toBeUndefined();
    });

    it('deletes any owner’s endpoint, with its deliveries, when no owner is named (the admin command)', async () => {
      await store.webhookEndpoints.create(endpoint(1), max);
      await store.webhookEndpoints.create(endpoint(2, 'bob'), max);
      expect(
        await store.create({ id: 1n, name: 'Fern' }, { outbox: { endpointPayload: '{"id":1}' } }),
      ).toEqual(expect.any(BigInt));
      expect(await store.webhookEndpoints.delete(endpoint(2).id)).toBe(true);
      expect(await store.webhookEndpoints.delete(endpoint(2).id)).toBe(false);
      expect(await store.webhookEndpoints.get(endpoint(2).id)).toBeUndefined();
      expect(await store.deliveries.pendingEndpoints({ limit: 10 })).toStrictEqual([endpoint(1).id]);
    });

    it('revokes a token and disables its endpoints in one change, failing their pending deliveries; others keep theirs', async () => {
      await store.tokens.create({ name: 'alice', digest: 'a'.repeat(64), scopes: ['read', 'webhooks'] });
      await store.tokens.create({ name: 'bob', digest: 'b'.repeat(64), scopes: ['read', 'webhooks'] });
      for (const n of [1, 2]) await store.webhookEndpoints.create(endpoint(n), max);
      await store.webhookEndpoints.create(endpoint(3, 'bob'), max);
      // One already disabled keeps its reason.
      await store.webhookEndpoints.disable(endpoint(2).id, 'operator');
      expect(
        await store.create({ id: 1n, name: 'Fern' }, { outbox: { endpointPayload: '{"id":1}' } }),
      ).toEqual(expect.any(BigInt));

      expect(await store.tokens.revoke('alice')).toStrictEqual({ endpointsDisabled: 1 });
      expect(await store.tokens.revoke('alice')).toBeUndefined();
      expect(await store.tokens.revoke('nobody')).toBeUndefined();
      expect((await store.webhookEndpoints.get(endpoint(1).id))!.disabled).toStrictEqual({
        at: expect.any(Date),
        reason: 'token_revoked',
      });
      expect((await store.webhookEndpoints.get(endpoint(2).id))!.disabled?.reason).toBe('operator');
      expect(await outcomes(1)).toStrictEqual([
        { status: 'failed', lastError: 'endpoint disabled (token_revoked)' },
      ]);
      expect((await store.webhookEndpoints.get(endpoint(3).id))!.disabled).toBeNull();
      expect(await store.deliveries.pendingEndpoints({ limit: 10 })).toStrictEqual([endpoint(3).id]);
      expect((await store.tokens.active()).map((token) => token.name)).toStrictEqual(['bob']);
    });

    it('discards what was enqueued for an endpoint that no longer exists, and nothing of one that does', async () => {
      await store.webhookEndpoints.create(endpoint(2), max);
      const orphan = { url: 'http://127.0.0.1:9/x', event: 'webhook.ping' as const, payload: '{}' };
      await store.deliveries.enqueue(
        { ...orphan, id: `msg_${'2'.repeat(32)}`, endpointId: endpoint(9).id },
        ROOM,
      );
      await store.deliveries.enqueue(
        { ...orphan, id: `msg_${'3'.repeat(32)}`, endpointId: endpoint(2).id },
        ROOM,
      );
      expect(await store.deliveries.discardOrphans(endpoint(2).id)).toBe(0);
      expect(await store.deliveries.discardOrphans(endpoint(9).id)).toBe(1);
      expect(await store.deliveries.pendingEndpoints({ limit: 10 })).toStrictEqual([endpoint(2).id]);
    });
  });
});
