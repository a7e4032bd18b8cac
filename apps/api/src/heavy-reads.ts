import type { Span } from '@opentelemetry/api';
import type { PlantWithId } from '@plant-store/schema';
import { ApiError } from './errors.ts';
import { PAGE_BUDGET_BYTES, textBytes } from './store/store.ts';

/**
 * Requests reading pages of plants (`GET /plants`, `plants.list`) that this process serves at once,
 * each counted from its first list call until its answer has been sent, since that is how long its
 * pages stay in memory. Past it: 503 with `Retry-After: 1`, at once (no queue).
 */
export const MAX_HEAVY_READS = 8;

/** The HTTP request an operation runs in, as its transport describes it. */
export type RequestScope = {
  /** How many calls the request carries: 1 over REST, the batch's size over /trpc. */
  calls: number;
  /** The request's span, when tracing records it (http/trace.ts). */
  span?: Span;
  /** The request's `Idempotency-Key` header, as sent; `undefined` without one. */
  idempotencyKey?: string;
  /** Marks the answer as the stored answer of an earlier request: `Idempotent-Replayed: true`. */
  markReplayed?(): void;
  /** Runs `done` once the answer has been sent or the connection has closed. */
  onAnswered(done: () => void): void;
  /** Cuts the connection at once, mid-answer: a stream's client then resumes, here or elsewhere. */
  abort(): void;
};

let reading = 0;
const admitted = new WeakSet<RequestScope>();

/**
 * Admits a list call, or throws a busy 503 when `MAX_HEAVY_READS` other requests are
 * reading. Returns the call's byte budget: the calls of one request share `PAGE_BUDGET_BYTES`, so a
 * batch of list calls holds no more than one page does (see `checkShare`).
 */
export function admitHeavyRead(request: RequestScope): number {
  if (!admitted.has(request)) {
    if (reading >= MAX_HEAVY_READS) {
      throw new ApiError('busy', 'Too many lists are being read right now; retry in a second.');
    }
    reading++;
    admitted.add(request);
    request.onAnswered(() => reading--);
  }
  return Math.floor(PAGE_BUDGET_BYTES / request.calls);
}

/**
 * A page holds at least one plant, even one larger than its budget, or a client could never list
 * past it. In a batch that would let each call hold a plant beyond its share, so there a call whose
 * first plant exceeds its share is refused (413) instead: list it in a request with fewer calls.
 */
export function checkShare(request: RequestScope, plants: readonly PlantWithId[], maxBytes: number): void {
  if (request.calls === 1 || plants.length !== 1 || textBytes(plants[0]!) <= maxBytes) return;
  throw new ApiError(
    'too_large',
    `The next plant is larger than this call's share of the page budget (${maxBytes} bytes: ` +
      `1 MiB shared by ${request.calls} calls); list it in a request with fewer calls.`,
  );
}
