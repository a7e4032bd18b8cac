import type { PlantWithId } from '@plant-store/schema';
import { RequestError } from '../errors.ts';
import { PAGE_BUDGET_BYTES } from '../store/contract.ts';
import { textBytes } from '../store/plant-columns.ts';

/**
 * Requests reading pages of plants (`GET /plants`, `plants.list`) that one app serves at once,
 * each counted from its first list call until its answer has been sent, since that is how long its
 * pages stay in memory. Past it: 503 with `Retry-After: 1`, at once (no queue).
 */
export const MAX_HEAVY_READS = 8;

/** What a heavy read knows of its request (operation.ts's `RequestScope` is one). */
export type ReadingRequest = {
  /** How many calls the request carries: 1 over REST, the batch's size over /trpc. */
  calls: number;
  /** Calls `done` once the request's answer has been sent. */
  onAnswered(done: () => void): void;
};

/** One app's count of heavy reads in flight (`createApp` makes one; apps in a process share nothing). */
export type HeavyReads = {
  /**
   * Admits a list call, or throws a busy 503 when `MAX_HEAVY_READS` other requests are reading.
   * Returns the call's byte budget: the calls of one request share `PAGE_BUDGET_BYTES`, so a batch
   * of list calls holds no more than one page does (see `checkShare`).
   */
  admit(request: ReadingRequest): number;
};

export function createHeavyReads(): HeavyReads {
  let reading = 0;
  const admitted = new WeakSet<ReadingRequest>();
  return {
    admit(request) {
      if (!admitted.has(request)) {
        if (reading >= MAX_HEAVY_READS) {
          throw new RequestError('busy', 'Too many lists are being read right now; retry in a second.');
        }
        reading++;
        admitted.add(request);
        request.onAnswered(() => reading--);
      }
      return Math.floor(PAGE_BUDGET_BYTES / request.calls);
    },
  };
}

/**
 * A page holds at least one plant, even one larger than its budget, or a client could never list
 * past it. In a batch that would let each call hold a plant beyond its share, so there a call whose
 * first plant exceeds its share is refused (413) instead: list it in a request with fewer calls.
 */
export function checkShare(request: ReadingRequest, plants: readonly PlantWithId[], maxBytes: number): void {
  if (request.calls === 1 || plants.length !== 1 || textBytes(plants[0]!) <= maxBytes) return;
  throw new RequestError(
    'too_large',
    `The next plant is larger than this call's share of the page budget (${maxBytes} bytes: ` +
      `1 MiB shared by ${request.calls} calls); list it in a request with fewer calls.`,
  );
}
