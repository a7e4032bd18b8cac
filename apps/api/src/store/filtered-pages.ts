import type { PlantPage } from './contract.ts';

/**
 * What a filtered page may cost, whatever the store holds (docs/api.md, "Filtered lists"):
 * - a `name_prefix` that at most `PREFIX_INDEX_ROWS` names start with is read from the name index
 *   (migration 16), those plants then taken in id order: one page answers it, complete;
 * - any other `name_prefix` (alone, or with a `tag`) is read in id order (a tag's through its index),
 *   at most `SCAN_ROWS` plants a page: a page may then come back short, even empty, with a next link.
 * A `tag` alone is read through its index: no budget needed.
 */
export const PREFIX_INDEX_ROWS = 2_000;
export const SCAN_ROWS = 10_000;

/**
 * The names starting with `prefix` are those in `[low, high)`, ordered by code point (SQLite's BINARY
 * collation and PostgreSQL's "C" both compare UTF-8 bytes): `high` is `prefix` with its last code point
 * the next one. `undefined` when no string follows (a prefix of U+10FFFF only).
 */
export function prefixRange(prefix: string): { low: string; high: string } | undefined {
  const points = Array.from(prefix, (char) => char.codePointAt(0)!);
  while (points.at(-1) === 0x10ffff) points.pop();
  const last = points.pop();
  if (last === undefined) return undefined;
  // No string holds a lone surrogate: past U+D7FF comes U+E000.
  points.push(last === 0xd7ff ? 0xe000 : last + 1);
  return { low: prefix, high: String.fromCodePoint(...points) };
}

/** The ids of `hits` (all of a rare prefix's plants) a page after `from` reads, ascending. */
export function candidates(hits: readonly bigint[], from: bigint): bigint[] {
  return hits.filter((id) => id >= from).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

/** How much of the plants a budgeted page scanned: `seen` of at most `SCAN_ROWS`, up to id `through`. */
export type Scanned = { seen: number; through: bigint | null };

/**
 * A budgeted page as answered: when it ended short of its `limit` because its budget was spent, more
 * may remain past the last id it read, which the next page starts after.
 */
export function budgeted(page: PlantPage, { seen, through }: Scanned): PlantPage {
  if (page.more || seen < SCAN_ROWS || through === null) return page;
  return { plants: page.plants, more: true, cursor: through };
}
