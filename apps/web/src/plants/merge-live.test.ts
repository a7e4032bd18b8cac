import { describe, expect, it } from 'vitest';
import { NO_FILTER, type PlantPage } from './list-query.ts';
import {
  type LiveChange,
  type LiveChanges,
  latestOf,
  mergeLive,
  pruneChanges,
  resumePosition,
  toChange,
  withChange,
} from './merge-live.ts';

const plant = (id: bigint, version = 1n, name = `plant ${id}`, tag?: string) => ({
  id,
  name,
  ...(tag !== undefined && { tag }),
  version,
});
const page = (ids: bigint[], next: bigint | null, readAt: number): PlantPage => ({
  plants: ids.map((id) => plant(id)),
  next,
  readAt,
});
const saved = (id: bigint, version: bigint, at: number, name?: string, tag?: string): LiveChange => ({
  type: 'saved',
  plant: plant(id, version, name, tag),
  at,
});
const deleted = (id: bigint, position: bigint, at: number): LiveChange => ({
  type: 'deleted',
  id,
  position,
  at,
});
const changes = (...list: LiveChange[]): LiveChanges => list.reduce<LiveChanges>(withChange, new Map());
const ids = (rows: { id: bigint }[]) => rows.map((row) => row.id);

describe('mergeLive', () => {
  // Two pages read at t=10 and t=20 (every plant at version 1), more in the store after id 40.
  const pages = [page([10n, 20n], 20n, 10), page([30n, 40n], 40n, 20)];

  it('adds a plant created after its page was read, in id order, and leaves out one beyond the loaded pages', () => {
    const rows = mergeLive(
      pages,
      changes(saved(15n, 5n, 11), saved(35n, 6n, 21), saved(41n, 7n, 30)),
      NO_FILTER,
    );
    expect(ids(rows)).toEqual([10n, 15n, 20n, 30n, 35n, 40n]);
  });

  it('removes a plant deleted after the version a page holds', () => {
    const rows = mergeLive(pages, changes(deleted(30n, 9n, 25)), NO_FILTER);
    expect(ids(rows)).toEqual([10n, 20n, 40n]);
  });

  it('replaces a row by a later version only: an older one, even seen later, never wins', () => {
    const later = mergeLive(pages, changes(saved(20n, 8n, 5, 'Renamed', 'new')), NO_FILTER);
    expect(later[1]).toEqual(plant(20n, 8n, 'Renamed', 'new'));
    const newer = [{ ...page([20n], null, 10), plants: [plant(20n, 9n, 'Newest')] }];
    expect(mergeLive(newer, changes(saved(20n, 8n, 50, 'Older')), NO_FILTER)).toEqual([
      plant(20n, 9n, 'Newest'),
    ]);
    // A deletion before the version a page holds (the plant was created again since) changes nothing.
    expect(mergeLive(newer, changes(deleted(20n, 7n, 50)), NO_FILTER)).toEqual([plant(20n, 9n, 'Newest')]);
  });

  it('keeps what a page read after a change says of a plant it lacks: the page is at least as recent', () => {
    const rows = mergeLive(pages, changes(saved(35n, 6n, 19)), NO_FILTER);
    expect(ids(rows)).toEqual([10n, 20n, 30n, 40n]);
  });

  it('under a filter, takes out a row updated out of it and adds one updated into it', () => {
    const filter = { tag: 'fern', namePrefix: 'Os' };
    const ferns = [
      {
        plants: [plant(10n, 1n, 'Osmunda', 'fern'), plant(20n, 1n, 'Osmunda regalis', 'fern')],
        next: null,
        readAt: 10,
      },
    ];
    const rows = mergeLive(
      ferns,
      changes(
        saved(10n, 5n, 11, 'Osmunda', 'moss'),
        saved(15n, 6n, 12, 'Osmunda claytoniana', 'fern'),
        saved(16n, 7n, 12, 'osmunda lowercase', 'fern'),
      ),
      filter,
    );
    expect(rows).toEqual([
      plant(15n, 6n, 'Osmunda claytoniana', 'fern'),
      plant(20n, 1n, 'Osmunda regalis', 'fern'),
    ]);
  });

  it('shows exact ids beyond 2^53, and a change applied twice once', () => {
    const big = 9223372036854775807n;
    const twice = changes(saved(big, 6n, 6, 'Fern'));
    const once = mergeLive([page([1n], null, 5)], twice, NO_FILTER);
    expect(
      mergeLive([{ ...page([1n], null, 5), plants: [plant(1n), plant(big, 6n, 'Fern')] }], twice, NO_FILTER),
    ).toEqual(once);
    expect(once.map((row) => String(row.id))).toEqual(['1', '9223372036854775807']);
  });
});

describe('withChange', () => {
  it('keeps the later change of a plant, whichever arrives last', () => {
    const event = saved(5n, 12n, 1, 'From the event');
    // This console's own answer for an earlier version, arriving after the event.
    expect(withChange(changes(event), saved(5n, 11n, 2, 'Own answer')).get(5n)).toBe(event);
    // A create this console made has no version yet (0): its event replaces it.
    expect(withChange(changes(saved(5n, 0n, 1)), event).get(5n)).toBe(event);
    // Its own deletion of version 12 is later than 12, and earlier than the plant created again.
    const own = deleted(5n, 13n, 3);
    expect(withChange(changes(event), own).get(5n)).toBe(own);
    expect(withChange(changes(own), saved(5n, 20n, 4)).get(5n)?.type).toBe('saved');
  });
});

describe('latestOf', () => {
  const rows = [plant(1n, 3n, 'Shown')];
  it('gives the row, or a later change of it (also one the filter hides), or its deletion', () => {
    expect(latestOf(rows, new Map(), 1n)).toEqual(plant(1n, 3n, 'Shown'));
    expect(latestOf(rows, changes(saved(1n, 2n, 1, 'Older')), 1n)).toEqual(plant(1n, 3n, 'Shown'));
    expect(latestOf([], changes(saved(1n, 4n, 1, 'Moved out', 'other')), 1n)).toEqual(
      plant(1n, 4n, 'Moved out', 'other'),
    );
    expect(latestOf(rows, changes(deleted(1n, 4n, 1)), 1n)).toBe('deleted');
    expect(latestOf(rows, new Map(), 2n)).toBeUndefined();
  });
});

describe('toChange', () => {
  it('reads a created, an updated and a deleted event of plants.events', () => {
    const at = 7;
    const createdAt = '2026-11-25T00:00:00.000Z';
    const fern = { id: 5n, name: 'Fern', tag: 'herb', version: 3n };
    expect(toChange({ id: 3n, type: 'plant.created', createdAt, plant: fern }, at)).toEqual({
      type: 'saved',
      plant: fern,
      at,
    });
    const renamed = { id: 5n, name: 'Fern 2', version: 4n };
    expect(
      toChange({ id: 4n, type: 'plant.updated', createdAt, plant: renamed, changed: ['name', 'tag'] }, at),
    ).toEqual({
      type: 'saved',
      plant: renamed,
      at,
    });
    expect(toChange({ id: 6n, type: 'plant.deleted', createdAt, plant: { id: 5n } }, at)).toEqual({
      type: 'deleted',
      id: 5n,
      position: 6n,
      at,
    });
  });
});

describe('pruneChanges', () => {
  it('drops the changes every loaded page already holds, and nothing else', () => {
    const known = changes(saved(1n, 2n, 5), deleted(2n, 3n, 15), saved(3n, 4n, 25));
    const pruned = pruneChanges(known, [page([], 100n, 10), page([], null, 20)]);
    expect([...pruned.keys()]).toEqual([2n, 3n]);
    expect(pruneChanges(pruned, [page([], null, 12)])).toBe(pruned);
  });
});

describe('resumePosition', () => {
  it('is the greatest version on the page requested first, none for an empty one', () => {
    const read = (readAt: number, versions: bigint[]): PlantPage => ({
      plants: versions.map((version, i) => plant(BigInt(i + 1), version)),
      next: null,
      readAt,
    });
    expect(resumePosition([read(20, [90n, 95n]), read(10, [7n, 40n, 12n])])).toBe(40n);
    expect(resumePosition([read(10, []), read(20, [5n])])).toBeUndefined();
    expect(resumePosition([])).toBeUndefined();
  });
});
