import type { CommitObserver, DbSystem } from './contract.ts';

type GroupCommitOptions = {
  system: DbSystem;
  concurrency?: number;
  max?: number;
  /** Told of each queued write and each batch (tracing: a span per batch, linked to its calls). */
  observer?: CommitObserver | undefined;
};

/**
 * Group commit: what one turn of the event loop queues goes out as one durable COMMIT (`max` a batch;
 * later items wait while `concurrency` run). `commit` answers each item, and rejects if the batch failed.
 */
export function groupCommit<T extends object>(
  commit: (batch: T[]) => Promise<void>,
  { system, concurrency = 1, max = Infinity, observer }: GroupCommitOptions,
) {
  const queued: T[] = [];
  let scheduled = false;
  const running = new Set<Promise<void>>();
  // What the observer keeps of the calls queueing items; empty, and no batch observed, while it keeps nothing.
  const marks = new Map<T, unknown>();
  const observe = (batch: readonly T[]) => {
    if (observer === undefined || marks.size === 0) return NOT_OBSERVED;
    const watched = observer.committing(
      system,
      batch.map((item) => marks.get(item)),
    );
    for (const item of batch) marks.delete(item);
    return watched;
  };

  function schedule(): void {
    if (scheduled || running.size >= concurrency || queued.length === 0) return;
    scheduled = true;
    setImmediate(() => {
      scheduled = false;
      while (queued.length > 0 && running.size < concurrency) {
        const batch = queued.splice(0, max);
        const watched = observe(batch);
        const done: Promise<void> = commit(batch)
          .then(
            () => watched.end(),
            (error: unknown) => watched.end(error),
          )
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
      const mark = observer?.queued();
      if (mark !== undefined) marks.set(item, mark);
      queued.push(item);
      schedule();
    },
    takeQueued(): T[] {
      marks.clear();
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

const NOT_OBSERVED = { end(_error?: unknown): void {} };
