import type { PlantWithId } from '@plant-store/schema';
import { type Db, sql } from './sql.ts';

/** A plant as SQL answers it: NULL where the schema's `PlantWithId` has no `tag`. */
export type PlantRow = { id: bigint; name: string; tag: string | null };

export function toPlant({ id, name, tag }: PlantRow): PlantWithId {
  return tag === null ? { id, name } : { id, name, tag };
}

const GET = sql('plants.get', 'SELECT id, name, tag FROM plants WHERE id = @id');

/** `PlantStore.get`, the same on both stores (their writes and pages differ: sqlite/, postgres/). */
export const getPlant = (db: Db) => (id: bigint) =>
  db.all<PlantRow>(GET, { id }).then(([row]) => (row === undefined ? undefined : toPlant(row)));

/**
 * The lowest id a page after `after` can hold (`PlantStore.list`), so that each store states its
 * page once; `undefined` after the greatest id there can be.
 */
export function pageStart(after: bigint | undefined): bigint | undefined {
  if (after === undefined) return -(2n ** 63n);
  return after < 2n ** 63n - 1n ? after + 1n : undefined;
}
