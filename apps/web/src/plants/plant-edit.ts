import { PlantSchema, type PlantWithId } from '@plant-store/schema';
import { type FieldErrors, fieldErrors } from './new-plant.ts';

/** The edit form's fields, as typed. */
export type EditFields = { name: string; tag: string };

/** What an edit changes, as `plants.update` takes it: only the fields edited; `tag: null` removes the tag. */
export type PlantChange = { name?: string; tag?: string | null };

/** The fields as the plant has them: an absent tag is an empty field. */
export function editFields(plant: PlantWithId): EditFields {
  return { name: plant.name, tag: plant.tag ?? '' };
}

/**
 * The edit of `plant` as the change to send, checked by the schema the api checks a plant with
 * (the same message per field). Only the fields that differ from `plant` are in it, so applying it
 * again to a newer version keeps what others changed in the other field; an empty Tag removes the
 * tag.
 */
export function parsePlantEdit(
  plant: PlantWithId,
  fields: EditFields,
): { ok: true; change: PlantChange } | { ok: false; errors: FieldErrors<keyof EditFields> } {
  const result = PlantSchema.safeParse({
    name: fields.name === '' ? undefined : fields.name,
    tag: fields.tag === '' ? undefined : fields.tag,
  });
  if (!result.success) return { ok: false, errors: fieldErrors(result.error, ['name', 'tag']) };
  const tag = fields.tag === '' ? null : fields.tag;
  return {
    ok: true,
    change: {
      ...(fields.name !== plant.name && { name: fields.name }),
      ...(tag !== (plant.tag ?? null) && { tag }),
    },
  };
}
