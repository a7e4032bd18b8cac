import { z } from 'zod';

/** The spec's `Error` record, the body of every error answer outside `/trpc`. */
export const ApiErrorSchema = z
  .object({
    error: z.int32().meta({ format: 'int32', description: 'Numeric error value (the HTTP status)' }),
    message: z.string().meta({ description: 'Error text' }),
  })
  .meta({ id: 'Error' });

export type ApiError = z.infer<typeof ApiErrorSchema>;
