import type { PlantEvent, PlantWithId } from '@plant-store/schema';
import { matchesFilter, type PlantFilter, type PlantPage } from './list-query.ts';

/**
 * The latest change the console saw to one plant, and when (`performance.now()`): the plant as
 * created or updated (at its `version`), or its deletion, at `position` in the event log (the
 * deletion's event id, or for this console's own deletion of version v, v + 1: no other change to
 * the plant lies between the two).
 */
export type LiveChange =
  | { type: 'saved'; plant: PlantWithId; at: number }
  | { type: 'deleted'; id: bigint; position: bigint; at: number };

/** The latest change per plant id. */
export type LiveChanges = ReadonlyMap<bigint, LiveChange>;

/** Where a change stands in the event log: later changes of a plant have greater positions. */
function position(change: LiveChange): bigint {
  return change.type === 'deleted' ? change.position : change.plant.version;
}

/** An event of `plants.events` as a change seen at `at`. */
export function toChange(event: PlantEvent, at: number): LiveChange {
  return event.type === 'plant.deleted'
    ? { type: 'deleted', id: event.plant.id, position: event.id, at }
    : { type: 'saved', plant: event.plant, at };
}

/**
 * `changes` with `change` as the latest for its plant, unless it already holds a later one (this
 * console's own answer may arrive after the event of a change made since).
 */
export function withChange(changes: LiveChanges, change: LiveChange): LiveChanges {
  const id = change.type === 'saved' ? change.plant.id : change.id;
  const known = changes.get(id);
  if (known !== undefined && position(known) >= position(change)) return changes;
  return new Map(changes).set(id, change);
}

/**
 * The rows to show under `filter` (which the pages' rows already match): the loaded pages with
 * the live changes they may not hold yet. A row is replaced or removed only by a later version of
 * its plant (never an older one); a plant a page lacks is added when the change was seen after
 * the page's request was sent (one seen before is in the page, or was undone by then) and it
 * matches the filter. A plant beyond the last loaded page while more remain is left for the page
 * that will hold it.
 */
export function mergeLive(
  pages: readonly PlantPage[],
  changes: LiveChanges,
  filter: PlantFilter,
): PlantWithId[] {
  const rows = pages.flatMap((page) => page.plants);
  if (changes.size === 0) return rows;
  const byId = new Map(rows.map((plant) => [plant.id, plant]));
  let added = false;
  for (const [id, change] of changes) {
    const page = pageHolding(pages, id);
    if (page === undefined) continue;
    const row = byId.get(id);
    if (row !== undefined ? position(change) <= row.version : change.at <= page.readAt) continue;
    if (change.type === 'deleted' || !matchesFilter(change.plant, filter)) byId.delete(id);
    else {
      added ||= row === undefined;
      byId.set(id, change.plant);
    }
  }
  const merged = [...byId.values()];
  return added ? merged.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)) : merged;
}

/**
 * The plant `id` as last seen, in `rows` (as shown) or in `changes` (also when a change took it
 * out of the filter), whichever is later: `'deleted'` once it was deleted, `undefined` if unknown.
 */
export function latestOf(
  rows: readonly PlantWithId[],
  changes: LiveChanges,
  id: bigint,
): PlantWithId | 'deleted' | undefined {
  const row = rows.find((plant) => plant.id === id);
  const change = changes.get(id);
  if (change === undefined || (row !== undefined && position(change) <= row.version)) return row;
  return change.type === 'deleted' ? 'deleted' : change.plant;
}

/**
 * An event-log position every loaded page holds all changes up to: the greatest version on the
 * page requested first (its request went after that change committed, and every other page's after
 * it). `undefined` when that page is empty. A stream resumed from here misses nothing the pages
 * lack; what it repeats, `mergeLive` applies once (by version).
 */
export function resumePosition(pages: readonly PlantPage[]): bigint | undefined {
  if (pages.length === 0) return undefined;
  const first = pages.reduce((earliest, page) => (page.readAt < earliest.readAt ? page : earliest));
  return first.plants.reduce<bigint | undefined>(
    (greatest, plant) => (greatest === undefined || plant.version > greatest ? plant.version : greatest),
    undefined,
  );
}

/**
 * The loaded page whose range holds `id`: pages cover consecutive id ranges, each up to its cursor
 * (`next`, its last id), the last one without a cursor up to the end.
 */
function pageHolding(pages: readonly PlantPage[], id: bigint): PlantPage | undefined {
  return pages.find((page) => page.next === null || id <= page.next);
}

/**
 * The changes the pages may still lack: those seen after the oldest page's request. The others
 * are in every page already, so the map stays as small as the changes since the last refresh.
 */
export function pruneChanges(changes: LiveChanges, pages: readonly PlantPage[]): LiveChanges {
  if (pages.length === 0) return changes;
  const oldest = Math.min(...pages.map((page) => page.readAt));
  const kept = [...changes].filter(([, change]) => change.at > oldest);
  return kept.length === changes.size ? changes : new Map(kept);
}
