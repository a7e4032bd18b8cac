import {
  DeletePlantInputSchema,
  ListPlantsQuerySchema,
  NewPlantSchema,
  PlantIdParamsSchema,
  PlantPatchSchema,
  PlantSchema,
  PlantWithIdSchema,
  type PlantWithId,
  UpdatePlantInputSchema,
  plantFieldsOf,
} from '@plant-store/schema';
import { z } from 'zod';
import { expectedOf, IfMatchHeaders, staleVersion } from './conditions.ts';
import { RequestError } from '../errors.ts';
import { checkShare } from './heavy-reads.ts';
import { IdempotencyKeyHeaders, keyRecord } from './idempotency.ts';
import { defineOperation, nextPageHeaders, storeCall } from './operation.ts';
import { newPlantPayload } from '../webhooks/event.ts';
import { HEADERS } from './answers.ts';

/** What an Idempotency-Key adds to an operation's answers (idempotency.ts). */
const KEY_ERRORS = {
  400: 'Also: the Idempotency-Key header is malformed',
  409: 'A request with this Idempotency-Key is still being processed; retry after Retry-After',
  422: 'This Idempotency-Key was used for a different request (another body, method or path)',
};

/** What a keyed change's success carries: whether it is a replay, and the plant's version after it. */
const CHANGED_HEADERS = z.object({
  'Idempotent-Replayed': HEADERS.idempotentReplayed,
  ETag: HEADERS.etagAfterChange,
});

/** 412, for the operations that take `If-Match` (tRPC: `expectedVersion`). */
const STALE = {
  412: 'If-Match names no current ETag of the plant (or expectedVersion is not its version): nothing was changed',
};

function noSuchPlant(id: bigint): never {
  throw new RequestError('not_found', `There is no plant with id ${id}.`);
}

export const createPlant = defineOperation({
  scope: 'write',
  openapi: {
    method: 'POST',
    path: '/plants',
    operationId: 'addPlant',
    summary: 'Create a plant',
    description:
      'Creates a new plant in the store. Send an `Idempotency-Key` to make it safe to retry: a retry of a ' +
      'create that did commit then gets the same 200 again (with `Idempotent-Replayed: true`), not 409. ' +
      'The answer’s `ETag` is the new plant’s version, and its `Content-Location` names the plant with the id ' +
      'exactly as stored (`/plants/{id}`): the answer’s body, the spec’s `Plant`, has no id.',
    tags: ['plants'],
    successDescription:
      'The created plant (or, with `Idempotent-Replayed: true`, the stored answer to a retry)',
    requestHeaders: IdempotencyKeyHeaders,
    responseHeaders: CHANGED_HEADERS.extend({ 'Content-Location': HEADERS.contentLocation }),
    errorResponses: {
      400: `The body is not valid JSON or not a NewPlant. ${KEY_ERRORS[400]}`,
      409: `A plant with this id already exists, or: ${KEY_ERRORS[409]}`,
      413: 'The body is larger than the limit',
      415: 'The body is not application/json',
      422: KEY_ERRORS[422],
    },
  },
  input: NewPlantSchema,
  output: PlantSchema,
  idempotencyKey: true,
  async run(ctx, plant) {
    const { store, webhooks } = ctx;
    const answer = plantFieldsOf(plant);
    // Every registered endpoint gets the payload operator subscribers get (fanned out in the store).
    const endpointPayload = newPlantPayload(plant);
    const outbox = { deliveries: webhooks.deliveriesFor(plant, endpointPayload), endpointPayload };
    const version = await storeCall(() => store.create(plant, { outbox, key: keyRecord(ctx, 200, answer) }));
    if (version === false) throw new RequestError('conflict', `A plant with id ${plant.id} already exists.`);
    ctx.request.setVersion?.(version);
    return answer;
  },
  rest: {
    status: 200,
    // On a replay too (rest.ts): the id is the request's, the same on every retry.
    present: (answer, { input }) => ({
      body: answer,
      headers: { 'Content-Location': `/plants/${input.id}` },
    }),
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
      'While more remain, the answer has a `Link: <…>; rel="next"` header (RFC 8288) with the next page, which ' +
      'keeps the filters. With `tag` and `name_prefix`, only the plants that match them.',
    tags: ['plants'],
    successDescription: 'A page of plants',
    responseHeaders: z.object({ Link: HEADERS.link }),
    errorResponses: {
      400: 'A bad limit, after, tag or name_prefix parameter',
      503: 'The store is unavailable, or too many lists are being read right now; retry later (see Retry-After)',
    },
  },
  input: ListPlantsQuerySchema,
  output: z.array(PlantWithIdSchema),
  async run(
    { store, request, heavyReads },
    { limit, after, tag, name_prefix: namePrefix },
  ): Promise<{ plants: PlantWithId[]; next: bigint | null }> {
    const maxBytes = heavyReads.admit(request);
    const { plants, more } = await storeCall(() => store.list({ limit, after, maxBytes, tag, namePrefix }));
    checkShare(request, plants, maxBytes);
    return { plants, next: more ? plants[plants.length - 1]!.id : null };
  },
  rest: {
    status: 200,
    present({ plants, next }, { path, input }) {
      const cursor = next === null ? null : { name: 'after', value: next };
      const filters = { tag: input.tag, name_prefix: input.name_prefix };
      return { body: plants, headers: nextPageHeaders(path, input.limit, cursor, filters) };
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
    description:
      'Returns the plant with this id; its `ETag` is its version. With `If-None-Match` naming that ETag ' +
      '(or `*`), the answer is 304 with no body: the plant has not changed since.',
    tags: ['plants'],
    successDescription: 'The plant',
    requestHeaders: z.object({
      'If-None-Match': z.string().optional().meta({
        description: 'Answer 304, without a body, when the plant’s ETag is one of these (or with `*`)',
        example: '"42"',
      }),
    }),
    responseHeaders: z.object({ ETag: HEADERS.etag }),
    errorResponses: {
      400: 'The id is not an int64',
      404: 'There is no plant with this id',
    },
  },
  input: PlantIdParamsSchema,
  output: PlantWithIdSchema,
  async run({ store, request }, { id }) {
    const plant = (await storeCall(() => store.get(id))) ?? noSuchPlant(id);
    request.setVersion?.(plant.version);
    return plant;
  },
});

export const updatePlant = defineOperation({
  scope: 'write',
  openapi: {
    method: 'PATCH',
    path: '/plants/{id}',
    operationId: 'updatePlant',
    summary: 'Update a plant',
    description:
      'Changes the plant with this id by a JSON Merge Patch (RFC 7396), sent as `application/merge-patch+json` ' +
      'or `application/json`: a member present replaces the field (`tag: null` removes the tag), a member ' +
      'absent leaves it. A patch that changes nothing answers 200 with the plant, its version unchanged, and ' +
      'appends no event. With `If-Match`, only if the plant’s ETag is one it names (412 otherwise, and nothing ' +
      'changes). With an `Idempotency-Key`, a retry of an update that did commit gets the same 200 again ' +
      '(with `Idempotent-Replayed: true`), not a second version.',
    tags: ['plants'],
    successDescription: 'The plant after the change; its `ETag` is its version',
    requestHeaders: IdempotencyKeyHeaders.extend(IfMatchHeaders.shape),
    responseHeaders: CHANGED_HEADERS,
    errorResponses: {
      400: `The body is not valid JSON or not a plant's merge patch (name null, a bad field, an id other than the path's). ${KEY_ERRORS[400]}`,
      404: 'There is no plant with this id',
      409: KEY_ERRORS[409],
      ...STALE,
      413: 'The body is larger than the limit',
      415: 'The body is not application/merge-patch+json or application/json',
      422: KEY_ERRORS[422],
    },
  },
  input: UpdatePlantInputSchema,
  body: PlantPatchSchema,
  output: PlantWithIdSchema,
  idempotencyKey: true,
  async run(ctx, { expectedVersion, ...change }): Promise<PlantWithId> {
    const { id } = change;
    const expected = expectedOf(ctx.request.ifMatch, expectedVersion);
    const outcome = await storeCall(() =>
      // The answer kept with the key is the plant the update leaves (`KeyRecord`).
      ctx.store.update(change, { expected, key: keyRecord(ctx, 200) }),
    );
    if (outcome === undefined) noSuchPlant(id);
    if ('stale' in outcome) throw staleVersion(id, outcome.stale);
    ctx.request.setVersion?.(outcome.plant.version);
    return outcome.plant;
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
      'Deletes a single plant based on the ID supplied. With `If-Match`, only if the plant’s ETag is one it ' +
      'names (412 otherwise, and nothing changes). With an `Idempotency-Key`, a retry of a delete that ' +
      'did commit gets the same 204 again (with `Idempotent-Replayed: true`), not 404.',
    tags: ['plants'],
    successDescription: 'The plant was deleted',
    requestHeaders: IdempotencyKeyHeaders.extend(IfMatchHeaders.shape),
    responseHeaders: z.object({ 'Idempotent-Replayed': HEADERS.idempotentReplayed }),
    errorResponses: {
      400: `The id is not an int64. ${KEY_ERRORS[400]}`,
      404: 'There is no plant with this id',
      409: KEY_ERRORS[409],
      ...STALE,
      422: KEY_ERRORS[422],
    },
  },
  input: DeletePlantInputSchema,
  idempotencyKey: true,
  async run(ctx, { id, expectedVersion }): Promise<void> {
    const expected = expectedOf(ctx.request.ifMatch, expectedVersion);
    const deleted = await storeCall(() => ctx.store.delete(id, { expected, key: keyRecord(ctx, 204) }));
    if (deleted === false) noSuchPlant(id);
    if (deleted !== true) throw staleVersion(id, deleted.stale);
  },
  rest: { status: 204 },
});
