import type { Span } from '@opentelemetry/api';
import { activeStoreSpan, type CommitSpan, NOT_TRACED, startCommitSpan } from '../tracing/commit.ts';
import type { DbSystem } from '../tracing/store.ts';

/**
 * Group commit, as both stores do it: what is queued in one turn of the event loop goes out together
 * at its end (setImmediate), at most `max` items a batch, and `commit` makes each batch durable at
 * once (one transaction, one COMMIT); while `concurrency` batches are running, later items wait for
 * one of them to end and go out together then. `commit` answers each item of its batch itself, and
 * rejects, having done so, when the batch failed.
 *
 * An item pushed by a traced store call keeps the call's span (`push` runs before the call's first
 * `await`), and a batch carrying one is traced as a `commit` span of `system`, linked both ways
 * with those calls (tracing/commit.ts), ended once `commit` settles: nothing is kept or started
 * when no call is traced.
 */
export function groupCommit<T extends object>(
  commit: (batch: T[]) => Promise<void>,
  { system, concurrency = 1, max = Infinity }: { system: DbSystem; concurrency?: number; max?: number },
) {
  const queued: T[] = [];
  let scheduled = false;
  const running = new Set<Promise<void>>();
  const carried = new Map<T, Span>();

  function traced(batch: T[]): CommitSpan {
    if (carried.size === 0) return NOT_TRACED;
    const span = startCommitSpan(
      system,
      batch.map((item) => carried.get(item)),
    );
    for (const item of batch) carried.delete(item);
    return span;
  }

  function schedule(): void {
    if (scheduled || running.size >= concurrency || queued.length === 0) return;
    scheduled = true;
    setImmediate(() => {
      scheduled = false;
      while (queued.length > 0 && running.size < concurrency) {
        const batch = queued.splice(0, max);
        const span = traced(batch);
        const done: Promise<void> = commit(batch)
          .then(() => span.end(), span.end)
          .finally(() => {
            running.delete(done);
            schedule();
          });
        running.add(done);
      }
    });
  }

  return {
    push(item: T): void {
      const span = activeStoreSpan();
      if (span) carried.set(item, span);
      queued.push(item);
      schedule();
    },
    /** What is queued and not yet going out, taken off the queue. */
    takeQueued(): T[] {
      carried.clear();
      return queued.splice(0);
    },
    /** Resolves when the batches going out now are done; `undefined` when none is. */
    running: () => (running.size === 0 ? undefined : Promise.allSettled(running).then(() => {})),
    /** Resolves once nothing is queued or going out. */
    async drained(): Promise<void> {
      while (queued.length > 0 || scheduled || running.size > 0)
        await (running.size > 0
          ? Promise.allSettled(running)
          : new Promise((resolve) => setImmediate(resolve)));
    },
  };
}
