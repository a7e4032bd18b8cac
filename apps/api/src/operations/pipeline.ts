import { describeIssues, RequestError } from '../errors.ts';
import { type KeyedResult, parseIdempotencyKey, runWithKey } from './idempotency.ts';
import {
  type AnyOperation,
  authorize,
  type OperationContext,
  type RequestContext,
  takesBody,
} from './operation.ts';

/**
 * Runs one call of an operation, whichever transport brought it (http/rest.ts, trpc/http-adapter.ts and the
 * tRPC procedures of trpc.ts all call it), in one order:
 * 1. authorize: a valid token (401), with the operation's scope (403);
 * 2. the Idempotency-Key, for an operation that takes one: in a request of one call, well formed
 *    (400); an operation that takes none ignores the header;
 * 3. the input: read only now (a REST body is not read for a refused request), then validated with
 *    the operation's schema (400 naming each field);
 * 4. run: with a key, the key is claimed first (idempotency.ts: replayed, 422 or 409), since its
 *    fingerprint is the validated input.
 * Every refusal is a `RequestError`, which each transport answers in its own shape.
 */
export async function runOperation(
  operation: AnyOperation,
  context: RequestContext,
  readInput: () => unknown,
  key: string | undefined,
): Promise<CallResult> {
  const principal = authorize(context.auth, operation.scope);
  const { request } = context;
  const claim = operation.idempotencyKey && key !== undefined ? checkKey(key, request.calls) : undefined;
  const parsed = operation.input.safeParse(await readInput());
  if (!parsed.success) {
    const where = takesBody(operation) ? 'request body' : 'request parameters';
    throw new RequestError('bad_request', describeIssues(parsed.error.issues, where), {
      cause: parsed.error,
    });
  }
  const { store, webhooks, events, endpoints, heavyReads } = context;
  const ctx: OperationContext = { store, webhooks, events, endpoints, heavyReads, request, principal };
  const input = parsed.data;
  if (claim === undefined) return { input, output: await operation.run(ctx, input) };
  const result = await runWithKey(operation, ctx, input, claim, context.idempotency);
  if ('replay' in result) request.markReplayed?.();
  return { input, ...result };
}

/** A call's validated input, and its output or the stored answer of an earlier request. */
export type CallResult = { input: unknown } & KeyedResult;

/** The key of an Idempotency-Key header, for a request of one call (a key names one request). */
function checkKey(header: string, calls: number): string {
  if (calls !== 1) {
    throw new RequestError(
      'bad_request',
      'An Idempotency-Key names one call: send a keyed call in a request of its own.',
    );
  }
  return parseIdempotencyKey(header);
}
