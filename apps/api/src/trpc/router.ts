import { operations } from '../operations/registry.ts';
import { proceduresOf, router } from './procedures.ts';

/** The whole API over /trpc: one procedure per operation of the registry, at the same path. */
export const appRouter = router(proceduresOf(operations));

export type AppRouter = typeof appRouter;
