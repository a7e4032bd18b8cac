import { TRPCError } from '@trpc/server';
import type { OpenApiMeta } from 'trpc-to-openapi';
import type { z } from 'zod';
import type { Principal, TokenVerifier } from './auth.ts';
import { StoreUnavailableError, type PlantStore } from './store/store.ts';

/** What an operation runs with once the caller is authenticated. */
export type OperationContext = { store: PlantStore; principal: Principal };

/**
 * One API operation, written once and served twice: as a tRPC procedure (`toMutation`/`toQuery` in
 * trpc.ts) and as a REST route (http/rest.ts), both authenticating with `authenticate`,
 * validating with `input` and running `run`.
 */
export type Operation<I extends z.ZodType = z.ZodType, O = unknown> = {
  openapi: NonNullable<OpenApiMeta['openapi']>;
  input: I;
  /** The REST answer's schema, for the OpenAPI document (answers are built by `run`, not re-parsed). */
  output?: z.ZodType;
  run(ctx: OperationContext, input: z.output<I>): Promise<O>;
  /**
   * How REST answers with `run`'s result when it is not simply `200` with the result as JSON body.
   * `path` is the request path (for links).
   */
  rest?: {
    status: number;
    present?(output: O, path: string): { body?: unknown; headers?: Record<string, string> };
  };
};

export type AnyOperation = Operation<z.ZodType, unknown>;

/** Identity helper that infers an operation's types. */
export function defineOperation<I extends z.ZodType, O>(operation: Operation<I, O>): Operation<I, O> {
  return operation;
}

/** Checks the bearer token, for both transports; throws tRPC's UNAUTHORIZED (401). */
export function authenticate(verifyToken: TokenVerifier, authorization: string | undefined): Principal {
  const auth = verifyToken(authorization);
  if (auth.ok) return auth.principal;
  throw new TRPCError({
    code: 'UNAUTHORIZED',
    message:
      auth.reason === 'missing'
        ? 'Missing bearer token: send it as "Authorization: Bearer <token>".'
        : 'The bearer token is not valid.',
  });
}

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
