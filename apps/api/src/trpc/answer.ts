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
  return { item: { result: { data: serialize(output) } }, error: null };
}

/**
 * superjson's encoding of `value`: `{json: value}` itself when superjson would add nothing (no
 * `meta`), which it takes most of a create's answer to find out (its walker copies the tree). Kept
 * by the 20% rule (docs/architecture.md, "Going around a library"); answer.test.ts fails when
 * superjson's encoding of such a value changes.
 */
function serialize(value: unknown): unknown {
  return isPlainJson(value, new Set()) ? { json: value } : transformer.serialize(value);
}

/**
 * Whether superjson leaves `value` as it is: strings, booleans, null, finite numbers but -0, in
 * plain objects and arrays without holes, each object once (superjson records repeated references),
 * and no key superjson refuses (it throws on those: the fallback then does).
 */
function isPlainJson(value: unknown, seen: Set<object>): boolean {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return true;
    case 'number':
      return Number.isFinite(value) && !Object.is(value, -0);
    case 'object': {
      if (value === null) return true;
      if (seen.has(value)) return false;
      seen.add(value);
      if (Array.isArray(value)) {
        for (let i = 0; i < value.length; i++) {
          if (!(i in value) || !isPlainJson(value[i], seen)) return false;
        }
        return Object.getPrototypeOf(value) === Array.prototype;
      }
      if (Object.getPrototypeOf(value) !== Object.prototype) return false;
      for (const key in value) {
        if (!Object.hasOwn(value, key) || REFUSED_KEYS.has(key)) return false;
        if (!isPlainJson((value as Record<string, unknown>)[key], seen)) return false;
      }
      return Object.getOwnPropertySymbols(value).length === 0;
    }
    default:
      return false;
  }
}

const REFUSED_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

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
