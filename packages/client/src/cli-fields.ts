import {
  type NewPlant,
  type OptionalPlantFieldName,
  PLANT_FIELD_NAMES,
  PLANT_FIELDS,
  type PlantFieldName,
  type PlantPatch,
  plantFieldsOf,
} from '@plant-store/schema';

/**
 * The CLI's side of `PLANT_FIELDS`: an option per field (`--name`, `--tag`), `--clear-<field>` for
 * an optional one, their usage, the table's columns and the bodies `--json` prints.
 */
const isOptional = (name: PlantFieldName): name is OptionalPlantFieldName => !PLANT_FIELDS[name].required;
const OPTIONAL_FIELDS = PLANT_FIELD_NAMES.filter(isOptional);

type FieldOptions = { [K in PlantFieldName]: { type: 'string' } } & {
  [K in OptionalPlantFieldName as `clear-${K}`]: { type: 'boolean' };
};

/** The options of node:util's `parseArgs` for the fields. */
export const FIELD_OPTIONS = Object.fromEntries([
  ...PLANT_FIELD_NAMES.map((name) => [name, { type: 'string' }]),
  ...OPTIONAL_FIELDS.map((name) => [`clear-${name}`, { type: 'boolean' }]),
]) as FieldOptions;

/** The options `create` takes for the fields, and `update`. */
export const CREATE_FIELD_OPTIONS: string[] = [...PLANT_FIELD_NAMES];
export const UPDATE_FIELD_OPTIONS: string[] = Object.keys(FIELD_OPTIONS);

/** The fields in a usage line: `--name <name> [--tag <tag>]` (create), `[--name <name>] [--tag <tag> | --clear-tag]` (update). */
export const CREATE_USAGE = PLANT_FIELD_NAMES.map((name) =>
  isOptional(name) ? `[--${name} <${name}>]` : `--${name} <${name}>`,
).join(' ');
export const UPDATE_USAGE = PLANT_FIELD_NAMES.map((name) =>
  isOptional(name) ? `[--${name} <${name}> | --clear-${name}]` : `[--${name} <${name}>]`,
).join(' ');

type Values = Record<string, unknown>;

/** The new plant `create`'s options give (the server checks it), or what is missing. */
export function newPlantOf(id: bigint, values: Values): NewPlant | string {
  const missing = PLANT_FIELD_NAMES.find((name) => !isOptional(name) && values[name] === undefined);
  if (missing !== undefined) return `create needs --${missing} <${missing}>.`;
  return { id, ...plantFieldsOf(values as Record<PlantFieldName, string | undefined>) } as NewPlant;
}

/** The patch `update`'s options give (`--clear-tag`: `tag: null`), or why they give none. */
export function patchOf(values: Values): PlantPatch | string {
  const patch: Record<string, string | null> = {};
  for (const name of PLANT_FIELD_NAMES) {
    const value = values[name];
    const clear = isOptional(name) && values[`clear-${name}`] === true;
    if (value !== undefined && clear) return `give --${name} or --clear-${name}, not both.`;
    if (typeof value === 'string') patch[name] = value;
    if (clear) patch[name] = null;
  }
  if (Object.keys(patch).length > 0) return patch as PlantPatch;
  const options = UPDATE_FIELD_OPTIONS.map((option) => `--${option}`);
  return `update needs ${options.slice(0, -1).join(', ')} or ${options.at(-1)}.`;
}

/** The table's headings for the fields: `NAME`, `TAG`. */
export const FIELD_HEADINGS = PLANT_FIELD_NAMES.map((name) => PLANT_FIELDS[name].label.toUpperCase());

/** A plant's fields as the table's cells ('' for an absent one, and for a deleted plant's event). */
export function fieldCells(plant: object): string[] {
  const fields = plant as { [K in PlantFieldName]?: string };
  return PLANT_FIELD_NAMES.map((name) => fields[name] ?? '');
}

/** A plant as the api's bodies show it, whatever else the client added (its `etag`). */
export function bodyOf<T extends NewPlant & { version?: bigint }>(plant: T): NewPlant & { version?: bigint } {
  const body = Object.assign({ id: plant.id }, plantFieldsOf(plant));
  return plant.version === undefined ? body : Object.assign(body, { version: plant.version });
}
