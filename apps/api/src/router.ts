import { plantsRouter } from './routers/plants.ts';
import { router } from './trpc.ts';

/** The whole API: every procedure, served over /trpc and, where it has OpenAPI metadata, over REST. */
export const appRouter = router({
  plants: plantsRouter,
});

export type AppRouter = typeof appRouter;
