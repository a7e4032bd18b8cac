import {
  type NewPlant,
  PLANT_FIELD_NAMES,
  PLANT_FIELDS,
  type PlantFieldName,
  type PlantWithId,
} from '@plant-store/schema';
import type { PlantChange } from './contract.ts';

/**
 * A plant's columns, derived from `PLANT_FIELDS` (packages/schema): the SQL both dialects list them
 * in, rows decoded by column name, the bytes a page's budget counts (`plantFieldMigration` in
 * migrations.ts adds a new field's columns).
 * Statement parameters are named after the columns (`@name`), so a row read and a row written have
 * one shape: `PlantRow`.
 */
const FIELDS = PLANT_FIELD_NAMES.map((name) => ({ name, ...PLANT_FIELDS[name] }));

type Column = (typeof PLANT_FIELDS)[PlantFieldName]['column'];
/** A plant as a row of `plants`: its fields by column name, NULL when absent. */
export type PlantRow = { id: bigint; version: bigint } & Record<Column, string | null>;

/** The field columns, comma-separated: `name, tag`. */
export const FIELD_COLUMNS = FIELDS.map((field) => field.column).join(', ');
/** Every column a plant is read with, in the order of `PlantWithId`. */
export const PLANT_COLUMNS = `id, ${FIELD_COLUMNS}, version`;
/** The field columns' parameters, in the same order: `@name, @tag`. */
export const FIELD_PARAMS = FIELDS.map((field) => `@${field.column}`).join(', ');
/**
 * Each set of field columns an update may change (every non-empty subset, in `FIELDS` order), keyed by
 * its fields joined with `+`, with its assignments: an UPDATE that assigns a column rewrites that
 * column's index entries even when the value stays, so an update assigns only what it changes.
 */
export const FIELD_CHANGES: Record<string, string> = {};
for (let mask = 1; mask < 2 ** FIELDS.length; mask++) {
  const set = FIELDS.filter((_, i) => mask & (2 ** i));
  FIELD_CHANGES[changeKey(set.map((field) => field.name))] = set
    .map(({ column }) => `${column} = @${column}`)
    .join(', ');
}
/** The key of `FIELD_CHANGES` for fields `changed` (in `FIELDS` order, as `applyChange` lists them). */
export function changeKey(changed: readonly PlantFieldName[]): string {
  return changed.join('+');
}
/** The UTF-8 bytes of a row's fields in SQL (`octet_length`): what a page's byte budget counts. */
export const FIELD_BYTES = FIELDS.map((field) =>
  field.required ? `octet_length(${field.column})` : `coalesce(octet_length(${field.column}), 0)`,
).join(' + ');

/** The UTF-8 bytes of a plant's fields, as `FIELD_BYTES` counts them. */
export function textBytes(plant: { [K in PlantFieldName]?: string | null | undefined }): number {
  let bytes = 0;
  for (const { name } of FIELDS) {
    const value = plant[name];
    if (value) bytes += Buffer.byteLength(value);
  }
  return bytes;
}

/** The plant a row holds (decoded by column name); an absent field (NULL) is left out. */
export function toPlant(row: PlantRow): PlantWithId {
  const plant: Record<string, unknown> = { id: row.id };
  for (const { name, column } of FIELDS) {
    const value = row[column];
    if (value !== null && value !== undefined) plant[name] = value;
  }
  plant.version = row.version;
  return plant as PlantWithId;
}

/** The row of a new plant, its version `version`. */
export function toRow(plant: NewPlant, version: bigint): PlantRow {
  const row: Record<string, unknown> = { id: plant.id };
  for (const { name, column } of FIELDS) row[column] = plant[name] ?? null;
  row.version = version;
  return row as PlantRow;
}

/** `row` with `change` applied (version unchanged), and the fields whose value that changed. */
export function applyChange(row: PlantRow, change: PlantChange) {
  const next: Record<string, unknown> = { id: row.id };
  const changed: PlantFieldName[] = [];
  for (const { name, column } of FIELDS) {
    const value = change[name];
    next[column] = value === undefined ? row[column] : value;
    if (next[column] !== row[column]) changed.push(name);
  }
  next.version = row.version;
  return { next: next as PlantRow, changed };
}

/** Each field column's array of `plants` (NULL where absent), as PostgreSQL's `unnest` reads them. */
export function fieldArrays(plants: readonly NewPlant[]): Record<string, (string | null)[]> {
  return Object.fromEntries(
    FIELDS.map(({ name, column }) => [`${column}_list`, plants.map((plant) => plant[name] ?? null)]),
  );
}
/** The parameters `fieldArrays` binds, cast for `unnest`: `@name_list::text[], @tag_list::text[]`. */
export const FIELD_ARRAYS = FIELDS.map((field) => `@${field.column}_list::text[]`).join(', ');
