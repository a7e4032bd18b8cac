import { afterEach } from 'vitest';

/**
 * Registers an `afterEach` that undoes what each test deferred, newest first, and returns `defer`.
 * Call it at a test file's top level, or in a fixture made there.
 */
export function deferAfterEach(): (cleanup: () => unknown) => void {
  let cleanups: (() => unknown)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
    cleanups = [];
  });
  return (cleanup) => {
    cleanups.push(cleanup);
  };
}
