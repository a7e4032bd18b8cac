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

/** What the document says of every text field a client sends (`text`). */
const TEXT_DESCRIPTION = 'Unicode text without NUL (U+0000).';

/**
 * How a plant's field is described in `PLANT_FIELDS`. Every field is text (`text`: Unicode without
 * NUL, limited to `maxLength` characters when a client sends it, unlimited when read back), and its
 * UTF-8 bytes count towards a page's byte budget (`PAGE_BUDGET_BYTES` in the api).
 */
export type PlantFieldSpec = {
  /** Required in `NewPlant` and always stored; an optional field may be absent (SQL NULL), and a patch's `null` removes it. */
  required: boolean;
  /** Its column in `plants` and in `plant_events` (add one with `plantFieldMigration` in the api). */
  column: string;
  /** The most characters a client may send. */
  maxLength: number;
  /** What it holds, as the document says of a stored plant's field. */
  about: string;
  /** What the document adds for the field a client sends, after `TEXT_DESCRIPTION`. */
  note?: string;
  /** Its label in the console's forms and table. */
  label: string;
};

/**
 * The one description of a plant's fields, in the order bodies, columns and files list them: the
 * schemas below, the stores' columns and rows, the writers and readers of every format, the CLI's
 * options and the console's forms all derive from it. A new field is a line here and a migration.
 */
export const PLANT_FIELDS = {
  // May be empty in 1.x: the 1.0.0 contract accepts `""`, and refusing it would break a client that
  // follows it. To be refused from 2.0.0 (`minLength: 1`).
  name: {
    required: true,
    column: 'name',
    maxLength: MAX_NAME_LENGTH,
    about: 'The name of the plant',
    note: ' An empty name is accepted in 1.x and will be refused from 2.0.0',
    label: 'Name',
  },
  tag: {
    required: false,
    column: 'tag',
    maxLength: MAX_TAG_LENGTH,
    about: 'Tag that specifies the type of plant',
    label: 'Tag',
  },
} as const satisfies Record<string, PlantFieldSpec>;

type Fields = typeof PLANT_FIELDS;
/** The name of a plant's field: a key of `PLANT_FIELDS`. */
export type PlantFieldName = keyof Fields;
/** The fields in their order (the order an update's `changed` lists them). */
export const PLANT_FIELD_NAMES = Object.keys(PLANT_FIELDS) as PlantFieldName[];
/** The fields a plant may lack (a patch's `null` removes one). */
export type OptionalPlantFieldName = {
  [K in PlantFieldName]: Fields[K]['required'] extends true ? never : K;
}[PlantFieldName];
const fieldsOf = <S>(make: (name: PlantFieldName, spec: PlantFieldSpec) => z.ZodType) =>
  Object.fromEntries(PLANT_FIELD_NAMES.map((name) => [name, make(name, PLANT_FIELDS[name])])) as S;

type Text = ReturnType<typeof text>;
type Maybe<K extends PlantFieldName, T extends z.ZodType> = Fields[K]['required'] extends true
  ? T
  : z.ZodOptional<T>;

/** The fields as a client sends them (`Plant`, `NewPlant`): with their limits. */
const sentFields = fieldsOf<{ [K in PlantFieldName]: Maybe<K, Text> }>((_, spec) => {
  const description = `${spec.about}. ${TEXT_DESCRIPTION}${spec.note ?? ''}`;
  return spec.required
    ? text(requiredString, spec.maxLength).meta({ description })
    : text('must be a string', spec.maxLength).optional().meta({ description });
});

/** The fields as a store answers them (`PlantWithId`): no limits (see `PlantWithIdSchema`). */
const storedFields = fieldsOf<{ [K in PlantFieldName]: Maybe<K, Text> }>((_, spec) =>
  spec.required
    ? text(requiredString).meta({ description: spec.about })
    : text('must be a string').optional().meta({ description: spec.about }),
);

/** The fields of a patch: each may be left out; an optional one may be `null` to remove it. */
const patchFields = fieldsOf<{
  [K in PlantFieldName]: Fields[K]['required'] extends true
    ? z.ZodOptional<Text>
    : z.ZodOptional<z.ZodNullable<Text>>;
}>((name, spec) =>
  spec.required
    ? (sentFields[name] as Text).optional()
    : text('must be a string or null', spec.maxLength)
        .nullable()
        .optional()
        .meta({ description: `The new ${name}, or null to remove it` }),
);

/** A plant as the store answers it: the spec's `Plant`. */
export const PlantSchema = z.object(sentFields).meta({ id: 'Plant' });

export type Plant = z.infer<typeof PlantSchema>;

/**
 * The fields of `source` a plant has, in `PLANT_FIELDS`' order, in a new object: an absent field
 * (`undefined`, or SQL's `NULL`) is left out, never sent as `null`.
 */
export function plantFieldsOf(source: { [K in PlantFieldName]?: string | null | undefined }): Plant {
  const fields: Record<string, string> = {};
  for (const name of PLANT_FIELD_NAMES) {
    const value = source[name];
    if (value !== undefined && value !== null) fields[name] = value;
  }
  return fields as Plant;
}

/** Identification number of a plant: a signed 64-bit integer, held as a `bigint` so no id is ever rounded. */
export const PlantIdSchema = z
  .int64({ error: (iss) => (iss.input === undefined ? 'is required' : `must be ${INT64_RANGE}`) })
  .meta({
    description:
      'Identification number of the plant: a signed 64-bit integer, exact over the whole range. Values beyond ' +
      '±2^53 need a JSON parser that keeps integers exact (JavaScript’s `JSON.parse` rounds them; so does a ' +
      'generated client that types int64 as `number`). The create answer’s `Content-Location` names the id stored',
  });

export type PlantId = z.infer<typeof PlantIdSchema>;

/** The body that creates a plant: the spec's `NewPlant` (every field of `Plant`, plus `id`). */
export const NewPlantSchema = z
  .object({ id: PlantIdSchema, ...sentFields }, { error: 'must be a JSON object' })
  .meta({ id: 'NewPlant' });

export type NewPlant = z.infer<typeof NewPlantSchema>;

const VERSION_MESSAGE = 'must be a plant version (a non-negative 64-bit integer)';

/**
 * A plant's version: the id of its last change in the event log (its `plant.created` or
 * `plant.updated` event), so it changes on every update, only grows, and is never reused. Plants
 * stored before versions existed have version 0 until their first update. REST sends it as the
 * strong `ETag` `"<version>"`.
 */
export const PlantVersionSchema = z
  .int64({ error: VERSION_MESSAGE })
  .min(0n, { error: VERSION_MESSAGE })
  .meta({
    description:
      'The plant’s version: the id of its last change in the event log (0 for a plant stored before versions ' +
      'existed and not changed since). Changes on every update; the ETag is this number in double quotes',
  });

export type PlantVersion = z.infer<typeof PlantVersionSchema>;

/**
 * A stored plant with its id and version, as listing, reading and updating answer it (`Plant` plus
 * `id` and `version`). No length limit: a store may hold plants written before the limits existed,
 * or by other means than this api.
 */
export const PlantWithIdSchema = z
  .object({
    id: PlantIdSchema,
    ...storedFields,
    version: PlantVersionSchema,
  })
  .meta({ id: 'PlantWithId' });

export type PlantWithId = z.infer<typeof PlantWithIdSchema>;

/** Most plants one list call answers; `limit` defaults to `DEFAULT_LIST_LIMIT`. */
export const MAX_LIST_LIMIT = 1000;
export const DEFAULT_LIST_LIMIT = 100;

/**
 * Query of `GET /plants`: a page of at most `limit` plants with ids greater than `after`, only those
 * with this `tag` and whose name starts with `name_prefix`, when given.
 */
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
  tag: text('must be a string', MAX_TAG_LENGTH)
    .optional()
    .meta({ description: 'Only plants with exactly this tag' }),
  name_prefix: text('must be a string', MAX_NAME_LENGTH).optional().meta({
    description:
      'Only plants whose name starts with this text, compared exactly: case-sensitive, code point by code point',
  }),
});

export type ListPlantsQuery = z.input<typeof ListPlantsQuerySchema>;

/**
 * The id in a path, described as briefly as the released contract does (Redocly's diff, comparing
 * parameters by their wording, takes a reworded one for another parameter).
 */
const PlantIdInPathSchema = PlantIdSchema.meta({ description: 'Identification number of the plant' });

/** Path parameters of `GET /plants/{id}` and `DELETE /plants/{id}`. */
export const PlantIdParamsSchema = z.object({ id: PlantIdInPathSchema });

/**
 * The body of `PATCH /plants/{id}`: a JSON Merge Patch (RFC 7396) of a plant. A member present
 * replaces the field (same rules and limits as in `NewPlant`), `tag: null` removes the tag, a
 * member absent leaves the field as it is. `id`, when sent, must be the path's.
 */
export const PlantPatchSchema = z
  .object(
    {
      id: PlantIdSchema.optional().meta({
        description: 'The plant’s id, if sent: must be the one in the path',
      }),
      ...patchFields,
    },
    { error: 'must be a JSON object' },
  )
  .meta({ id: 'PlantPatch' });

export type PlantPatch = z.infer<typeof PlantPatchSchema>;

/**
 * Input of `plants.update` (and of `PATCH /plants/{id}`: the path's id with the body's members):
 * the fields to change and, optionally, the version the caller last saw (REST: `If-Match`).
 */
export const UpdatePlantInputSchema = z.object(
  {
    id: PlantIdInPathSchema,
    ...patchFields,
    expectedVersion: PlantVersionSchema.optional().meta({
      description: 'Change the plant only if this is its version (otherwise 412 / PRECONDITION_FAILED)',
    }),
  },
  { error: 'must be a JSON object' },
);

export type UpdatePlantInput = z.input<typeof UpdatePlantInputSchema>;

/** Input of `plants.delete` (and the path of `DELETE /plants/{id}`, whose `If-Match` is its `expectedVersion`). */
export const DeletePlantInputSchema = z.object({
  id: PlantIdInPathSchema,
  expectedVersion: UpdatePlantInputSchema.shape.expectedVersion,
});

export type DeletePlantInput = z.input<typeof DeletePlantInputSchema>;
