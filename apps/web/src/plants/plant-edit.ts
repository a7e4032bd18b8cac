import {
  PLANT_FIELD_NAMES,
  PLANT_FIELDS,
  type PlantFieldName,
  type PlantPatch,
  PlantSchema,
  type PlantWithId,
} from '@plant-store/schema';
import { type FieldErrors, fieldErrors, valuesOf } from './new-plant.ts';

/** The edit form's fields, as typed: every field of `PLANT_FIELDS`. */
export type EditFields = Record<PlantFieldName, string>;

/** What an edit changes, as `plants.update` takes it: only the fields edited; `null` removes an optional one. */
export type PlantChange = Omit<PlantPatch, 'id'>;

/** The fields as the plant has them (none: empty): an absent one is an empty field. */
export function editFields(plant: PlantWithId | undefined): EditFields {
  return Object.fromEntries(PLANT_FIELD_NAMES.map((name) => [name, plant?.[name] ?? ''])) as EditFields;
}

/**
 * The edit of `plant` as the change to send, checked by the schema the api checks a plant with
 * (the same message per field). Only the fields that differ from `plant` are in it, so applying it
 * again to a newer version keeps what others changed in the other fields; an empty optional field
 * (Tag) removes it.
 */
export function parsePlantEdit(
  plant: PlantWithId,
  fields: EditFields,
): { ok: true; change: PlantChange } | { ok: false; errors: FieldErrors<keyof EditFields> } {
  const result = PlantSchema.safeParse(valuesOf(fields));
  if (!result.success) return { ok: false, errors: fieldErrors(result.error, PLANT_FIELD_NAMES) };
  const change: Record<string, string | null> = {};
  for (const name of PLANT_FIELD_NAMES) {
    const value = fields[name] === '' && !PLANT_FIELDS[name].required ? null : fields[name];
    if (value !== (plant[name] ?? null)) change[name] = value;
  }
  return { ok: true, change: change as PlantChange };
}
