import { commitTracing } from '../tracing/commit.ts';
import type { DbSystem } from '../tracing/traced-store.ts';

/**
 * Group commit: what one turn of the event loop queues goes out as one durable COMMIT (`max` a batch;
 * later items wait while `concurrency` run). `commit` answers each item, and rejects if the batch failed.
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
    takeQueued(): T[] {
      tracing.clear();
      return queued.splice(0);
    },
    /** Resolves when the batches going out now are done; `undefined` when none is. */
    running: () => (running.size === 0 ? undefined : Promise.allSettled(running).then(() => {})),
    async drained(): Promise<void> {
      while (queued.length > 0 || scheduled || running.size > 0)
        await (running.size > 0
          ? Promise.allSettled(running)
          : new Promise((resolve) => setImmediate(resolve)));
    },
  };
}
