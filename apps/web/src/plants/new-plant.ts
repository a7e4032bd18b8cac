import {
  INTEGER_LITERAL,
  type NewPlant,
  NewPlantSchema,
  PLANT_FIELD_NAMES,
  type PlantFieldName,
} from '@plant-store/schema';
import type { z } from 'zod';

/** The add form's fields, as typed: the id and every field of `PLANT_FIELDS`. */
export type NewPlantFields = { id: string } & Record<PlantFieldName, string>;

/** The add form, empty. */
export const EMPTY_NEW_PLANT = Object.fromEntries(
  ['id', ...PLANT_FIELD_NAMES].map((name) => [name, '']),
) as NewPlantFields;

/** A form's text as a field's value: an empty field is absent. */
export const valuesOf = (fields: Record<PlantFieldName, string>) =>
  Object.fromEntries(PLANT_FIELD_NAMES.map((name) => [name, fields[name] === '' ? undefined : fields[name]]));

/** A message per field that failed, worded as the api words it ("name is required"). */
export type FieldErrors<F extends string = keyof NewPlantFields> = Partial<Record<F, string>>;

/**
 * The form as the api's `NewPlant`, checked by the schema the api checks it with, so a plant the
 * form refuses is one the api would refuse, with the same message per field. An empty field is
 * absent. The id goes to the schema as a `bigint` when it is an integer literal (exact at any
 * size: never through `Number`), else as the text, which the schema refuses as the api does.
 */
export function parseNewPlant(
  fields: NewPlantFields,
): { ok: true; plant: NewPlant } | { ok: false; errors: FieldErrors } {
  const id = fields.id.trim();
  const result = NewPlantSchema.safeParse({
    id: id === '' ? undefined : INTEGER_LITERAL.test(id) ? BigInt(id) : id,
    ...valuesOf(fields),
  });
  if (result.success) return { ok: true, plant: result.data };
  return { ok: false, errors: fieldErrors(result.error, ['id', ...PLANT_FIELD_NAMES]) };
}

/** The first message of each of `fields` in a schema's refusal, after the field's name. */
export function fieldErrors<F extends string>(error: z.ZodError, fields: readonly F[]): FieldErrors<F> {
  const errors: FieldErrors<F> = {};
  for (const issue of error.issues) {
    const field = fields.find((name) => name === issue.path[0]);
    if (field !== undefined && errors[field] === undefined) errors[field] = `${field} ${issue.message}`;
  }
  return errors;
}
