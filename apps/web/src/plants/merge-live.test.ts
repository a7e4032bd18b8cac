import { describe, expect, it } from 'vitest';
import type { PlantPage } from './list-query.ts';
import { type LiveChange, type LiveChanges, mergeLive, pruneChanges, toChange } from './merge-live.ts';

const plant = (id: bigint, name = `plant ${id}`) => ({ id, name });
const page = (ids: bigint[], next: bigint | null, readAt: number): PlantPage => ({
  plants: ids.map((id) => plant(id)),
  next,
  readAt,
});
const changes = (...list: LiveChange[]): LiveChanges =>
  new Map(list.map((change) => [change.type === 'created' ? change.plant.id : change.id, change]));
const ids = (rows: { id: bigint }[]) => rows.map((row) => row.id);

describe('mergeLive', () => {
  // Two pages read at t=10 and t=20, more in the store after id 40.
  const pages = [page([10n, 20n], 20n, 10), page([30n, 40n], 40n, 20)];

  it('adds a plant created after its page was read, in id order, and leaves out one beyond the loaded pages', () => {
    const rows = mergeLive(
      pages,
      changes(
        { type: 'created', plant: plant(15n), at: 11 },
        { type: 'created', plant: plant(35n), at: 21 },
        { type: 'created', plant: plant(41n), at: 30 },
      ),
    );
    expect(ids(rows)).toEqual([10n, 15n, 20n, 30n, 35n, 40n]);
  });

  it('removes a plant deleted after its page was read', () => {
    const rows = mergeLive(pages, changes({ type: 'deleted', id: 30n, at: 25 }));
    expect(ids(rows)).toEqual([10n, 20n, 40n]);
  });

  it('keeps what a page read after a change says: the page is at least as recent', () => {
    const rows = mergeLive(
      pages,
      changes({ type: 'deleted', id: 40n, at: 15 }, { type: 'created', plant: plant(35n), at: 19 }),
    );
    expect(ids(rows)).toEqual([10n, 20n, 30n, 40n]);
  });

  it('applies a change it already holds without a duplicate, and shows exact ids beyond 2^53', () => {
    const big = 9223372036854775807n;
    const last = [page([1n], null, 5)];
    const twice = changes({ type: 'created', plant: plant(big, 'Fern'), at: 6 });
    const once = mergeLive(last, twice);
    expect(mergeLive([page([1n, big], null, 5)], twice)).toEqual(once);
    expect(once.map((row) => String(row.id))).toEqual(['1', '9223372036854775807']);
  });

  it('reads a created and a deleted event of plants.events', () => {
    const at = 7;
    const created = toChange(
      {
        id: 3n,
        type: 'plant.created',
        createdAt: '2026-11-25T00:00:00.000Z',
        plant: { id: 5n, name: 'Fern', tag: 'herb' },
      },
      at,
    );
    expect(created).toEqual({ type: 'created', plant: { id: 5n, name: 'Fern', tag: 'herb' }, at });
    const deleted = toChange(
      { id: 4n, type: 'plant.deleted', createdAt: '2026-11-25T00:00:00.000Z', plant: { id: 5n } },
      at,
    );
    expect(deleted).toEqual({ type: 'deleted', id: 5n, at });
  });
});

describe('pruneChanges', () => {
  it('drops the changes every loaded page already holds, and nothing else', () => {
    const known = changes(
      { type: 'created', plant: plant(1n), at: 5 },
      { type: 'deleted', id: 2n, at: 15 },
      { type: 'created', plant: plant(3n), at: 25 },
    );
    const pruned = pruneChanges(known, [page([], 100n, 10), page([], null, 20)]);
    expect([...pruned.keys()]).toEqual([2n, 3n]);
    expect(pruneChanges(pruned, [page([], null, 12)])).toBe(pruned);
  });
});
