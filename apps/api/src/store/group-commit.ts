import { commitTracing } from '../tracing/commit.ts';
import type { DbSystem } from '../tracing/store.ts';

/**
 * Group commit, as both stores do it: what is queued in one turn of the event loop goes out together
 * at its end (setImmediate), at most `max` items a batch, and `commit` makes each batch durable at
 * once (one transaction, one COMMIT); while `concurrency` batches are running, later items wait for
 * one of them to end and go out together then. `commit` answers each item of its batch itself, and
 * rejects, having done so, when the batch failed. A batch carrying a traced call's item is traced as
 * a `commit` of `system`, ended once `commit` settles (tracing/commit.ts).
 */
export function groupCommit<T extends object>(
  commit: (batch: T[]) => Promise<void>,
  { system, concurrency = 1, max = Infinity }: { system: DbSystem; concurrency?: number; max?: number },
) {
  const queued: T[] = [];
  let scheduled = false;
  const running = new Set<Promise<void>>();
  const tracing = commitTracing<T>(system);

  function schedule(): void {
    if (scheduled || running.size >= concurrency || queued.length === 0) return;
    scheduled = true;
    setImmediate(() => {
      scheduled = false;
      while (queued.length > 0 && running.size < concurrency) {
        const batch = queued.splice(0, max);
        const span = tracing.start(batch);
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
      // Before the first `await` of the store call queueing it: its span is current only until then.
      tracing.queued(item);
      queued.push(item);
      schedule();
    },
    /** What is queued and not yet going out, taken off the queue. */
    takeQueued(): T[] {
      tracing.clear();
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
