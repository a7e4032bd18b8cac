import { operations } from './operations/index.ts';
import { proceduresOf, router } from './trpc.ts';

/** The whole API over /trpc: one procedure per operation of the registry, at the same path. */
export const appRouter = router(proceduresOf(operations));

export type AppRouter = typeof appRouter;
