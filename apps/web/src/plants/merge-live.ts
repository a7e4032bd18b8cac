import type { PlantEvent, PlantWithId } from '@plant-store/schema';
import type { PlantPage } from './list-query.ts';

/** The latest change the console saw to one plant, and when (`performance.now()`). */
export type LiveChange =
  | { type: 'created'; plant: PlantWithId; at: number }
  | { type: 'deleted'; id: bigint; at: number };

/** The latest change per plant id. */
export type LiveChanges = ReadonlyMap<bigint, LiveChange>;

/** An event of `plants.events` as a change seen at `at`. */
export function toChange(event: PlantEvent, at: number): LiveChange {
  return event.type === 'plant.created'
    ? { type: 'created', plant: event.plant, at }
    : { type: 'deleted', id: event.plant.id, at };
}

/** `changes` with `change` as the latest for its plant. */
export function withChange(changes: LiveChanges, change: LiveChange): LiveChanges {
  const id = change.type === 'created' ? change.plant.id : change.id;
  return new Map(changes).set(id, change);
}

/**
 * The rows to show: the loaded pages with the live changes they may not hold yet. A change seen
 * after a page's request was sent may be missing from it, and is applied (applying one it already
 * holds changes nothing); one seen before is already in it, and the page wins (it may be newer). A
 * plant beyond the last loaded page while more remain is left for the page that will hold it.
 */
export function mergeLive(pages: readonly PlantPage[], changes: LiveChanges): PlantWithId[] {
  const rows = pages.flatMap((page) => page.plants);
  if (changes.size === 0) return rows;
  const byId = new Map(rows.map((plant) => [plant.id, plant]));
  let added = false;
  for (const [id, change] of changes) {
    const page = pageHolding(pages, id);
    if (page === undefined || change.at <= page.readAt) continue;
    if (change.type === 'deleted') byId.delete(id);
    else {
      added ||= !byId.has(id);
      byId.set(id, change.plant);
    }
  }
  const merged = [...byId.values()];
  return added ? merged.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)) : merged;
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
