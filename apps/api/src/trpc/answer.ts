import { getTRPCErrorFromUnknown, type TRPCError } from '@trpc/server';
import { getHTTPStatusCode } from '@trpc/server/http';
import type { Context } from 'koa';
import { asTrpcError, describeTrpcError, transformer, trpcErrorShape } from './procedures.ts';

/** Where the tRPC wire protocol is served: `/trpc/<procedure>[,<procedure>…]`. */
export const TRPC_PREFIX = '/trpc/';

/** One call's outcome in tRPC's wire format, and the error behind it (`null` for a result). */
export type TrpcOutcome = { item: object; error: TRPCError | null };

/** A call's result as tRPC's HTTP protocol sends it. */
export function trpcResult(output: unknown): TrpcOutcome {
  return { item: { result: { data: transformer.serialize(output) } }, error: null };
}

/** Anything thrown by a call (or before any call ran) as tRPC's error for it. */
export function trpcFailure(thrown: unknown, path: string | undefined): TrpcOutcome {
  const error = getTRPCErrorFromUnknown(asTrpcError(thrown));
  return { item: { error: transformer.serialize(trpcErrorShape(error, path)) }, error };
}

/**
 * Writes tRPC's answer: an array of the calls' items for a batch (`?batch=1`), the one item
 * otherwise (a refusal of the whole request is one item, which @trpc/client hands to every call of
 * a batch). The status is tRPC's (207 for mixed outcomes); the headers REST would send with these
 * errors come too: RFC 6750's challenge with a 401, `Retry-After` with a 429 or a busy 503.
 */
export function answerTrpc(ctx: Context, batch: boolean, outcomes: readonly TrpcOutcome[]): void {
  const body = batch ? outcomes.map((outcome) => outcome.item) : outcomes[0]!.item;
  const errors = outcomes.map((outcome) => outcome.error);
  if (errors.some((error) => error !== null)) {
    ctx.status = getHTTPStatusCode(body as never, errors as TRPCError[]);
    ctx.set(errorHeaders(errors));
  } else {
    ctx.status = 200;
  }
  ctx.type = 'application/json';
  ctx.body = JSON.stringify(body);
}

/** The REST headers of these errors, for tRPC's own handler too (its `responseMeta`). */
export function errorHeaders(errors: readonly (TRPCError | null | undefined)[]): Record<string, string> {
  return Object.assign({}, ...errors.map((error) => (error ? describeTrpcError(error).headers : undefined)));
}
