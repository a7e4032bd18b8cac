import { afterAll, beforeAll } from 'vitest';

/**
 * One running api for a whole test file: `start` runs before its first test, and the api is
 * stopped and cleaned up after its last. The handle reads through to it (`api.url`, `api.logs`, …).
 */
export function perFile<Api extends { stop(): Promise<unknown>; cleanup(): void }>(
  start: () => Promise<Api>,
): Api {
  let started: Api | undefined;
  beforeAll(async () => {
    started = await start();
  });
  afterAll(async () => {
    await started?.stop();
    started?.cleanup();
  });
  return new Proxy({} as Api, {
    get(_, key) {
      if (started === undefined) throw new Error('the api is not started yet (use it inside a test)');
      return started[key as keyof Api];
    },
  });
}
