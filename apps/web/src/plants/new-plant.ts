import { INTEGER_LITERAL, type NewPlant, NewPlantSchema } from '@plant-store/schema';

/** The add form's fields, as typed. */
export type NewPlantFields = { id: string; name: string; tag: string };

/** A message per field that failed, worded as the api words it ("name is required"). */
export type FieldErrors = Partial<Record<keyof NewPlantFields, string>>;

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
    name: fields.name === '' ? undefined : fields.name,
    tag: fields.tag === '' ? undefined : fields.tag,
  });
  if (result.success) return { ok: true, plant: result.data };
  const errors: FieldErrors = {};
  for (const issue of result.error.issues) {
    const field = issue.path[0];
    if ((field === 'id' || field === 'name' || field === 'tag') && errors[field] === undefined) {
      errors[field] = `${field} ${issue.message}`;
    }
  }
  return { ok: false, errors };
}
