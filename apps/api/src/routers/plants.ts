import { NewPlantSchema, PlantSchema } from '@plant-store/schema';
import { TRPCError } from '@trpc/server';
import { defineOperation, storeCall } from '../operation.ts';
import { router, toMutation } from '../trpc.ts';

/** Statuses every bearer-protected operation can answer besides its own. */
const PROTECTED_ERRORS = {
  401: 'Missing or unknown bearer token',
  500: 'Internal error',
  503: 'The store is unavailable; retry later',
};

export const createPlant = defineOperation({
  openapi: {
    method: 'POST',
    path: '/plants',
    operationId: 'addPlant',
    summary: 'Create a plant',
    description: 'Creates a new plant in the store.',
    tags: ['plants'],
    successDescription: 'The created plant',
    errorResponses: {
      400: 'The body is not valid JSON or not a NewPlant',
      409: 'A plant with this id already exists',
      413: 'The body is larger than the limit',
      415: 'The body is not application/json',
      ...PROTECTED_ERRORS,
    },
  },
  input: NewPlantSchema,
  output: PlantSchema,
  async run({ store }, plant) {
    const created = await storeCall(() => store.create(plant));
    if (!created)
      throw new TRPCError({ code: 'CONFLICT', message: `A plant with id ${plant.id} already exists.` });
    return plant.tag === undefined ? { name: plant.name } : { name: plant.name, tag: plant.tag };
  },
});

export const plantsRouter = router({
  create: toMutation(createPlant),
});
