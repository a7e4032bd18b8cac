import { TRPCError } from '@trpc/server';
import { StoreUnavailableError } from '../store/store.ts';

/** Runs a store operation, turning "the store is unavailable" into tRPC's 503. */
export async function storeCall<T>(operation: () => Promise<T>): Promise<T> {
  try {
    return await operation();
  } catch (cause) {
    if (cause instanceof StoreUnavailableError) {
      throw new TRPCError({ code: 'SERVICE_UNAVAILABLE', message: 'The store is unavailable.', cause });
    }
    throw cause;
  }
}
