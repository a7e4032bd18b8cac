import type { PlantEvent } from '@plant-store/schema';

/** What a test compares of an event: its type and plant (the id and time are checked apart). */
export const shape = ({ type, plant }: PlantEvent) => ({ type, plant });

/**
 * Collects what an async iterable yields, in the background, until `stop()` (which calls `abort`:
 * a pending `next()` would hold up `return()`); `until(n)` waits for the first `n` (or fails after
 * `timeoutMs`).
 */
export function collect<T>(iterable: AsyncIterable<T>, abort: () => void) {
  const items: T[] = [];
  let failure: unknown;
  let waiter: (() => void) | undefined;
  const iterator = iterable[Symbol.asyncIterator]();
  const done = (async () => {
    try {
      for (let next = await iterator.next(); !next.done; next = await iterator.next()) {
        items.push(next.value);
        waiter?.();
      }
    } catch (error) {
      failure = error;
      waiter?.();
    }
  })();
  return {
    items,
    get failure() {
      return failure;
    },
    async until(count: number, timeoutMs = 15_000): Promise<T[]> {
      const deadline = Date.now() + timeoutMs;
      while (items.length < count) {
        if (failure !== undefined) throw failure;
        if (Date.now() > deadline) throw new Error(`${items.length} of ${count} items after ${timeoutMs} ms`);
        await new Promise<void>((resolve) => {
          waiter = resolve;
          setTimeout(resolve, 50);
        });
      }
      return items.slice(0, count);
    },
    async stop(): Promise<void> {
      abort();
      await done;
    },
  };
}

/** The api's port, to restart it on the same one. */
export const portOf = (url: string) => new URL(url).port;
