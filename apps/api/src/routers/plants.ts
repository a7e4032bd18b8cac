import { NewPlantSchema, PlantSchema } from '@plant-store/schema';
import { TRPCError } from '@trpc/server';
import { protectedProcedure, router } from '../trpc.ts';
import { storeCall } from './store-call.ts';

/** Statuses every bearer-protected operation can answer besides its own. */
export const PROTECTED_ERRORS = { 401: 'Missing or unknown bearer token', 500: 'Internal error', 503: 'The store is unavailable' };

export const plantsRouter = router({
  create: protectedProcedure
    .meta({
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
    })
    .input(NewPlantSchema)
    .output(PlantSchema)
    .mutation(async ({ ctx, input }) => {
      const created = await storeCall(() => ctx.store.create(input));
      if (!created) {
        throw new TRPCError({ code: 'CONFLICT', message: `A plant with id ${input.id} already exists.` });
      }
      return input.tag === undefined ? { name: input.name } : { name: input.name, tag: input.tag };
    }),
});
