import {
  ListPlantsQuerySchema,
  NewPlantSchema,
  PlantIdParamsSchema,
  PlantSchema,
  PlantWithIdSchema,
  type PlantWithId,
  withTag,
} from '@plant-store/schema';
import { z } from 'zod';
import { RequestError } from '../errors.ts';
import { checkShare } from '../heavy-reads.ts';
import { IdempotencyKeyHeaders, keyedAnswer, ReplayedHeaders } from '../idempotency.ts';
import { defineOperation, nextPageHeaders, storeCall } from '../operation.ts';
import { newPlantPayload } from '../webhooks/event.ts';

/** What an Idempotency-Key adds to an operation's answers (idempotency.ts). */
const KEY_ERRORS = {
  400: 'Also: the Idempotency-Key header is malformed',
  409: 'A request with this Idempotency-Key is still being processed; retry after Retry-After',
  422: 'This Idempotency-Key was used for a different request (another body, method or path)',
};

/** What an operation that takes an Idempotency-Key declares besides its own metadata. */
const KEYED = {
  requestHeaders: IdempotencyKeyHeaders,
  responseHeaders: ReplayedHeaders,
} as const;

function noSuchPlant(id: bigint): never {
  throw new RequestError('not_found', `There is no plant with id ${id}.`);
}

/** Statuses every bearer-protected operation can answer besides its own. */
export const PROTECTED_ERRORS = {
  401: 'Missing or unknown bearer token',
  403: 'The token lacks the scope this operation needs',
  500: 'Internal error',
  503: 'The store is unavailable; retry later',
};

export const createPlant = defineOperation({
  scope: 'write',
  openapi: {
    method: 'POST',
    path: '/plants',
    operationId: 'addPlant',
    summary: 'Create a plant',
    description:
      'Creates a new plant in the store. Send an `Idempotency-Key` to make it safe to retry: a retry of a ' +
      'create that did commit then gets the same 200 again (with `Idempotent-Replayed: true`), not 409.',
    tags: ['plants'],
    successDescription:
      'The created plant (or, with `Idempotent-Replayed: true`, the stored answer to a retry)',
    ...KEYED,
    errorResponses: {
      400: `The body is not valid JSON or not a NewPlant. ${KEY_ERRORS[400]}`,
      409: `A plant with this id already exists, or: ${KEY_ERRORS[409]}`,
      413: 'The body is larger than the limit',
      415: 'The body is not application/json',
      422: KEY_ERRORS[422],
      ...PROTECTED_ERRORS,
    },
  },
  input: NewPlantSchema,
  output: PlantSchema,
  idempotencyKey: true,
  async run(ctx, plant) {
    const { store, webhooks } = ctx;
    const answer = withTag({ name: plant.name }, plant.tag);
    // Every registered endpoint gets the payload operator subscribers get (fanned out in the store).
    const payload = newPlantPayload(plant);
    const created = await storeCall(() =>
      store.create(plant, webhooks.deliveriesFor(plant, payload), keyedAnswer(ctx, 200, answer), payload),
    );
    if (!created) throw new RequestError('conflict', `A plant with id ${plant.id} already exists.`);
    return answer;
  },
});

export const listPlants = defineOperation({
  scope: 'read',
  openapi: {
    method: 'GET',
    path: '/plants',
    operationId: 'listPlants',
    summary: 'List plants',
    description:
      'Returns all plants from the system that the user has access to, in ascending id order, one page at a time. ' +
      'While more remain, the answer has a `Link: <…>; rel="next"` header (RFC 8288) with the next page.',
    tags: ['plants'],
    successDescription: 'A page of plants',
    responseHeaders: z.object({
      Link: z
        .string()
        .optional()
        .meta({ description: 'The next page, as `<url>; rel="next"`, while more remain' }),
    }),
    errorResponses: {
      400: 'A bad limit or after parameter',
      ...PROTECTED_ERRORS,
      503: 'The store is unavailable, or too many lists are being read right now; retry later (see Retry-After)',
    },
  },
  input: ListPlantsQuerySchema,
  output: z.array(PlantWithIdSchema),
  async run(
    { store, request, heavyReads },
    { limit, after },
  ): Promise<{ plants: PlantWithId[]; next: bigint | null }> {
    const maxBytes = heavyReads.admit(request);
    const { plants, more } = await storeCall(() => store.list({ limit, after, maxBytes }));
    checkShare(request, plants, maxBytes);
    return { plants, next: more ? plants[plants.length - 1]!.id : null };
  },
  rest: {
    status: 200,
    present({ plants, next }, { path, input }) {
      const cursor = next === null ? null : { name: 'after', value: next };
      return { body: plants, headers: nextPageHeaders(path, input.limit, cursor) };
    },
  },
});

export const getPlant = defineOperation({
  scope: 'read',
  openapi: {
    method: 'GET',
    path: '/plants/{id}',
    operationId: 'getPlant',
    summary: 'Read a plant',
    description: 'Returns the plant with this id.',
    tags: ['plants'],
    successDescription: 'The plant',
    errorResponses: {
      400: 'The id is not an int64',
      404: 'There is no plant with this id',
      ...PROTECTED_ERRORS,
    },
  },
  input: PlantIdParamsSchema,
  output: PlantWithIdSchema,
  async run({ store }, { id }) {
    return (await storeCall(() => store.get(id))) ?? noSuchPlant(id);
  },
});

export const deletePlant = defineOperation({
  scope: 'write',
  openapi: {
    method: 'DELETE',
    path: '/plants/{id}',
    operationId: 'deletePlant',
    summary: 'Delete a plant',
    description:
      'Deletes a single plant based on the ID supplied. With an `Idempotency-Key`, a retry of a delete that ' +
      'did commit gets the same 204 again (with `Idempotent-Replayed: true`), not 404.',
    tags: ['plants'],
    successDescription: 'The plant was deleted',
    ...KEYED,
    errorResponses: {
      400: `The id is not an int64. ${KEY_ERRORS[400]}`,
      404: 'There is no plant with this id',
      ...PROTECTED_ERRORS,
      409: KEY_ERRORS[409],
      422: KEY_ERRORS[422],
    },
  },
  input: PlantIdParamsSchema,
  idempotencyKey: true,
  async run(ctx, { id }): Promise<void> {
    const { store } = ctx;
    const deleted = await storeCall(() => store.delete(id, keyedAnswer(ctx, 204)));
    if (!deleted) noSuchPlant(id);
  },
  rest: { status: 204 },
});
