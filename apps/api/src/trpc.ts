import { initTRPC } from '@trpc/server';
import superjson from 'superjson';
import type { OpenApiMeta } from 'trpc-to-openapi';
import type { z } from 'zod';
import type { AuthResult } from './auth.ts';
import { toHttpError } from './errors.ts';
import type { RequestScope } from './heavy-reads.ts';
import { type AnyOperation, authorize, type Operation } from './operation.ts';
import type { PlantStore } from './store/store.ts';
import type { NewPlantWebhook } from './webhooks/event.ts';

/**
 * What every procedure sees, whichever transport called it. Tests build it directly.
 * @see https://trpc.io/docs/server/context
 */
export type Context = {
  store: PlantStore;
  /** The new-plant webhook's subscribers: what a create enqueues with the plant. */
  webhooks: NewPlantWebhook;
  /** The request's bearer token, checked once per HTTP request (http/auth.ts). */
  auth: AuthResult;
  /** The HTTP request the call arrived in. */
  request: RequestScope;
};

const t = initTRPC
  .context<Context>()
  .meta<OpenApiMeta<{ operation?: AnyOperation }>>()
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

/**
 * An operation's procedure: authorized for the operation's scope, then its input validated.
 * @see https://trpc.io/docs/server/authorization
 */
function withOperation<I extends z.ZodType, O>(operation: Operation<I, O>) {
  return t.procedure
    .use(({ ctx, next }) => next({ ctx: { principal: authorize(ctx.auth, operation.scope) } }))
    .meta({ openapi: operation.openapi, operation: operation as unknown as AnyOperation })
    .input(operation.input);
}

/** The tRPC mutation of an operation; its metadata carries the operation for the REST adapter. */
export function toMutation<I extends z.ZodType, O>(operation: Operation<I, O>) {
  return withOperation(operation).mutation(({ ctx, input }) => operation.run(ctx, input as z.output<I>));
}

/** The tRPC query of an operation; its metadata carries the operation for the REST adapter. */
export function toQuery<I extends z.ZodType, O>(operation: Operation<I, O>) {
  return withOperation(operation).query(({ ctx, input }) => operation.run(ctx, input as z.output<I>));
}

/** @see https://trpc.io/docs/server/server-side-calls */
export const createCallerFactory = t.createCallerFactory;
