import type { PlantEvent } from '@plant-store/schema';

/**
 * What a test compares of an event: its type and plant (the id and time are checked apart). A
 * created or updated plant's version must be the event's id (it is left out of what is compared).
 */
export const shape = ({ id, type, plant }: PlantEvent) => {
  if (!('version' in plant)) return { type, plant };
  const { version, ...rest } = plant;
  if (version !== id) throw new Error(`the plant of event ${id} has version ${version}, not the event's id`);
  return { type, plant: rest };
};

/**
 * Resolves once `ready()` is true, checking every 50 ms (and whenever the `wake` handed to `onWait`
 * is called); rejects with `failure()` as its message once `timeoutMs` have passed.
 */
export async function waitFor(
  ready: () => boolean,
  { timeoutMs, failure }: { timeoutMs: number; failure: () => string },
  onWait?: (wake: () => void) => void,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!ready()) {
    if (Date.now() > deadline) throw new Error(failure());
    await new Promise<void>((resolve) => {
      onWait?.(resolve);
      setTimeout(resolve, 50);
    });
  }
}

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
      await waitFor(
        () => {
          if (failure !== undefined) throw failure;
          return items.length >= count;
        },
        { timeoutMs, failure: () => `${items.length} of ${count} items after ${timeoutMs} ms` },
        (wake) => {
          waiter = wake;
        },
      );
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
