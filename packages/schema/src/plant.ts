import { z } from 'zod';

const INT64_RANGE = 'an integer from -9223372036854775808 to 9223372036854775807';

/** Error messages that read after the field's name: "id is required", "name must be a string". */
const requiredString = (iss: { input?: unknown }) =>
  iss.input === undefined ? 'is required' : 'must be a string';

const TEXT_MESSAGE = 'must be Unicode text without NUL (U+0000) characters or unpaired surrogates';

/**
 * Longest `name`, in characters (Unicode code points, as JSON Schema's `maxLength` counts them):
 * room for any botanical name with its cultivar and a trade name, while a page of plants stays small.
 */
export const MAX_NAME_LENGTH = 200;
/** Longest `tag`, in characters: a category such as "succulent" or "aroid, climbing". */
export const MAX_TAG_LENGTH = 100;

/**
 * Text every store keeps exactly: PostgreSQL's TEXT cannot hold U+0000, and an unpaired surrogate
 * is not Unicode (stores would turn it into U+FFFD while the answer echoed the original). zod
 * counts `maxLength` in code points, and the document renders it as JSON Schema's `maxLength`.
 */
const text = (error: typeof requiredString | string, maxLength?: number) => {
  const string = z.string({ error });
  return (
    maxLength === undefined
      ? string
      : string.max(maxLength, { error: `must be at most ${maxLength} characters` })
  ).refine((value) => value.isWellFormed() && !value.includes('\u0000'), { error: TEXT_MESSAGE });
};

/** A plant as the store answers it: the spec's `Plant`. */
export const PlantSchema = z
  .object({
    name: text(requiredString, MAX_NAME_LENGTH).meta({ description: 'The name of the plant' }),
    tag: text('must be a string', MAX_TAG_LENGTH)
      .optional()
      .meta({ description: 'Tag that specifies the type of plant' }),
  })
  .meta({ id: 'Plant' });

export type Plant = z.infer<typeof PlantSchema>;

/** Identification number of a plant: a signed 64-bit integer, held as a `bigint` so no id is ever rounded. */
export const PlantIdSchema = z
  .int64({ error: (iss) => (iss.input === undefined ? 'is required' : `must be ${INT64_RANGE}`) })
  .meta({ description: 'Identification number of the plant' });

export type PlantId = z.infer<typeof PlantIdSchema>;

/** The body that creates a plant: the spec's `NewPlant` (every field of `Plant`, plus `id`). */
export const NewPlantSchema = z
  .object(
    {
      id: PlantIdSchema,
      name: PlantSchema.shape.name,
      tag: PlantSchema.shape.tag,
    },
    { error: 'must be a JSON object' },
  )
  .meta({ id: 'NewPlant' });

export type NewPlant = z.infer<typeof NewPlantSchema>;

/**
 * A stored plant with its id, as listing and reading answer it (`Plant` plus `id`). No length limit:
 * a store may hold plants written before the limits existed, or by other means than this api.
 */
export const PlantWithIdSchema = z
  .object({
    id: PlantIdSchema,
    name: text(requiredString).meta({ description: 'The name of the plant' }),
    tag: text('must be a string').optional().meta({ description: 'Tag that specifies the type of plant' }),
  })
  .meta({ id: 'PlantWithId' });

export type PlantWithId = z.infer<typeof PlantWithIdSchema>;

/** Most plants one list call answers; `limit` defaults to `DEFAULT_LIST_LIMIT`. */
export const MAX_LIST_LIMIT = 1000;
export const DEFAULT_LIST_LIMIT = 100;

/** Query of `GET /plants`: a page of at most `limit` plants with ids greater than `after`. */
export const ListPlantsQuerySchema = z.object({
  limit: z
    .int32({ error: `must be an integer from 1 to ${MAX_LIST_LIMIT}` })
    .min(1)
    .max(MAX_LIST_LIMIT)
    .default(DEFAULT_LIST_LIMIT)
    .meta({ format: 'int32', description: 'The maximum number of results to return' }),
  after: PlantIdSchema.optional().meta({
    description:
      'Cursor: answer only plants whose id is greater than this one (the last id of the previous page)',
  }),
});

export type ListPlantsQuery = z.input<typeof ListPlantsQuerySchema>;

/** Path parameters of `GET /plants/{id}` and `DELETE /plants/{id}`. */
export const PlantIdParamsSchema = z.object({ id: PlantIdSchema });
