import { initTRPC, TRPCError } from '@trpc/server';
import superjson from 'superjson';
import type { OpenApiMeta } from 'trpc-to-openapi';
import type { TokenVerifier } from './auth.ts';
import { toHttpError } from './errors.ts';
import type { PlantStore } from './store/store.ts';

/**
 * What every procedure sees, whichever transport called it. Tests build it directly.
 * @see https://trpc.io/docs/server/context
 */
export type Context = {
  store: PlantStore;
  verifyToken: TokenVerifier;
  /** The raw `Authorization` header of the request. */
  authorization: string | undefined;
};

const t = initTRPC
  .context<Context>()
  .meta<OpenApiMeta>()
  .create({
    // superjson carries bigint ids exactly over /trpc.
    transformer: superjson,
    // Never put stack traces in answers, whatever NODE_ENV is.
    isDev: false,
    errorFormatter({ shape, error }) {
      return { ...shape, message: toHttpError(error).message };
    },
  });

/** @see https://trpc.io/docs/server/routers */
export const router = t.router;

/** Procedures anyone may call (health checks). @see https://trpc.io/docs/server/procedures */
export const publicProcedure = t.procedure;

/** Procedures that need a valid bearer token. @see https://trpc.io/docs/server/authorization */
export const protectedProcedure = t.procedure.use(({ ctx, next }) => {
  const auth = ctx.verifyToken(ctx.authorization);
  if (!auth.ok) {
    throw new TRPCError({
      code: 'UNAUTHORIZED',
      message:
        auth.reason === 'missing'
          ? 'Missing bearer token: send it as "Authorization: Bearer <token>".'
          : 'The bearer token is not valid.',
    });
  }
  return next({ ctx: { principal: auth.principal } });
});

/** @see https://trpc.io/docs/server/server-side-calls */
export const createCallerFactory = t.createCallerFactory;
