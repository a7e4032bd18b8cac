import { createHash, randomUUID } from 'node:crypto';
import { parseJson, stringifyJson } from '@plant-store/schema';
import { z } from 'zod';
import type { IdempotencyPolicy } from '../config/config.ts';
import { RequestError } from '../errors.ts';
import { type AnyOperation, type OperationContext, storeCall } from './operation.ts';
import { KeyClaimLostError, type KeyRecord, type StoredAnswer } from '../store/contract.ts';

/**
 * `Idempotency-Key` on `POST /plants` and `DELETE /plants/{id}` (and their tRPC mutations), after
 * the IETF httpapi draft "The Idempotency-Key HTTP Header Field":
 * - the first request with a key claims it (scoped to the token's name) and runs; the store keeps
 *   its answer with its change, in the same transaction;
 * - a repeat with the same fingerprint (method, path and canonical input) gets that answer again,
 *   marked `Idempotent-Replayed: true`; a different fingerprint gets 422; a repeat while the first
 *   is still in flight gets 409 with `Retry-After: 1`; a malformed key gets 400;
 * - a request that fails (4xx, 5xx) changes nothing and frees the key: a retry runs again;
 * - a claim whose request never completed (its process died) is taken over by a repeat with the same
 *   fingerprint after `inFlightMs`; the change commits only while its request still holds the key,
 *   so at most one request per key ever makes its change;
 * - keys are kept `ttlMs` from their claim, then forgotten (and pruned).
 */
export type { IdempotencyPolicy };

export const DEFAULT_IDEMPOTENCY_POLICY: IdempotencyPolicy = { ttlMs: 86_400_000, inFlightMs: 10_000 };

/** Longest key, in characters once unquoted. */
export const MAX_KEY_LENGTH = 255;

/**
 * A well-formed `Idempotency-Key` header: an sf-string (RFC 8941 §3.3.3: printable ASCII in double
 * quotes, `\"` and `\\` escaped) of 1 to `MAX_KEY_LENGTH` characters once unquoted, or the same
 * bare (as many clients send a UUID or a Stripe-style key: no quotes, spaces or commas). The
 * document declares this pattern, and `parseIdempotencyKey` checks it: one rule for both.
 */
const KEY_PATTERN = new RegExp(
  `^(?:"(?:[\\x20\\x21\\x23-\\x5b\\x5d-\\x7e]|\\\\["\\\\]){1,${MAX_KEY_LENGTH}}"|[A-Za-z0-9\\-._~+/=:]{1,${MAX_KEY_LENGTH}})$`,
);

/** The Idempotency-Key request header as the OpenAPI document declares it, and as the server checks it. */
export const IdempotencyKeyHeaders = z.object({
  'Idempotency-Key': z
    .string()
    .max(MAX_KEY_LENGTH + 2)
    .regex(KEY_PATTERN)
    .optional()
    .meta({
      description:
        'Makes the request safe to retry: a repeat with the same key and the same request within the retention ' +
        'period (24 h by default) gets the first answer again, with `Idempotent-Replayed: true`, and changes ' +
        `nothing. An sf-string of 1 to ${MAX_KEY_LENGTH} characters once unquoted (a bare key of as many is ` +
        'accepted too); keys are scoped to the bearer token. A new key for each new request, such as a random UUID.',
      example: '"8e03978e-40d5-43e8-bc93-6894a57f9324"',
    }),
});

const KEY_HEADER = IdempotencyKeyHeaders.shape['Idempotency-Key'].unwrap();

/**
 * The key of an `Idempotency-Key` header, as `KEY_PATTERN` describes it, unquoted. 400 otherwise (an
 * empty key, a list of several, anything longer than `MAX_KEY_LENGTH`).
 */
export function parseIdempotencyKey(header: string): string {
  if (!KEY_HEADER.safeParse(header).success) {
    throw new RequestError(
      'bad_request',
      `The Idempotency-Key header must be a string of 1 to ${MAX_KEY_LENGTH} printable ASCII characters, such as "8e03978e-40d5-43e8-bc93-6894a57f9324".`,
    );
  }
  return header.startsWith('"') ? header.slice(1, -1).replace(/\\(["\\])/g, '$1') : header;
}

/** What a keyed operation resolves to: its output, or the stored answer of an earlier request. */
export type KeyedResult = { output: unknown } | { replay: StoredAnswer };

/** Runs `operation` under `key`, as this module describes. Errors are `RequestError`s. */
export async function runWithKey(
  operation: AnyOperation,
  ctx: OperationContext,
  input: unknown,
  key: string,
  policy: IdempotencyPolicy,
): Promise<KeyedResult> {
  const { store, principal } = ctx;
  const claim = { tokenName: principal.tokenName, key, claim: randomUUID() };
  const fingerprint = fingerprintOf(operation, input);
  const outcome = await storeCall(() => store.idempotencyKeys.claim({ ...claim, fingerprint, ...policy }));
  if (outcome.state !== 'claimed') {
    if (outcome.fingerprint !== fingerprint) {
      throw new RequestError(
        'unprocessable',
        'This Idempotency-Key was used for a different request; send a new key with a new request.',
      );
    }
    if (outcome.state === 'in_flight') throw inFlight();
    return { replay: outcome.answer };
  }
  try {
    return { output: await operation.run(Object.assign({}, ctx, { keyClaim: claim }), input) };
  } catch (error) {
    if (error instanceof KeyClaimLostError) throw inFlight();
    // Nothing was changed (or, after a 503, the store decides: a committed answer is kept).
    await store.idempotencyKeys.release(claim).catch(() => {});
    throw error;
  }
}

/**
 * The Idempotency-Key record a keyed operation hands the store to keep with its change (its claim and
 * answer; `body` left out: the store's, see `KeyRecord`); `undefined` without a key.
 */
export function keyRecord(ctx: OperationContext, status: number, body?: unknown): KeyRecord | undefined {
  if (ctx.keyClaim === undefined) return undefined;
  const record: KeyRecord = Object.assign({}, ctx.keyClaim, { status });
  if (body !== undefined) record.body = stringifyJson(body);
  return record;
}

/** A stored answer as a tRPC result: its body, parsed. */
export function replayedOutput(answer: StoredAnswer): unknown {
  return answer.body === null ? undefined : parseJson(answer.body);
}

function inFlight(): RequestError {
  return new RequestError(
    'conflict',
    'A request with this Idempotency-Key is still being processed; retry it in a second.',
    { headers: { 'Retry-After': '1' } },
  );
}

/** SHA-256 of the operation's method and path and its validated input as canonical JSON (sorted keys). */
export function fingerprintOf(operation: AnyOperation, input: unknown): string {
  const { method, path } = operation.openapi;
  return createHash('sha256')
    .update(`${method} ${path}\n${stringifyJson(sortKeys(input))}`)
    .digest('hex');
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((key) => [key, sortKeys((value as Record<string, unknown>)[key])]),
  );
}
