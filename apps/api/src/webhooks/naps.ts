/**
 * Naps that `wake` or an abort of `signal` ends early, leaving no timer and no listener behind. (A
 * sleep raced against a wake kept both until its time was up: under load the worker woke more often
 * than it napped out, and Node warned of a listener leak on `signal`.)
 */
export function wakeableNaps(signal: AbortSignal): { nap(ms: number): Promise<void>; wake(): void } {
  let end: (() => void) | undefined;
  return {
    nap: (ms) =>
      new Promise<void>((resolve) => {
        if (signal.aborted) return resolve();
        const finish = () => {
          clearTimeout(timer);
          signal.removeEventListener('abort', finish);
          end = undefined;
          resolve();
        };
        const timer = setTimeout(finish, ms);
        signal.addEventListener('abort', finish);
        end = finish;
      }),
    wake: () => end?.(),
  };
}

/**
 * Turns a write of many items into a call per item: the items of calls made while a write runs go
 * into the next write, all at once. Each call settles as its write does.
 */
export function batched<T>(write: (items: T[]) => Promise<void>): (item: T) => Promise<void> {
  let open: { items: T[]; written: Promise<void> } | undefined;
  let previous: Promise<unknown> = Promise.resolve();
  return (item) => {
    if (!open) {
      const batch: { items: T[]; written?: Promise<void> } = { items: [] };
      batch.written = previous.then(() => {
        if (open === batch) open = undefined;
        return write(batch.items);
      });
      previous = batch.written.catch(() => {});
      open = batch as { items: T[]; written: Promise<void> };
    }
    open.items.push(item);
    return open.written;
  };
}
