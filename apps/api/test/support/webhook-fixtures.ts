import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { deferAfterEach } from './cleanups.ts';
import { TOKEN } from './http.ts';
import { type RunningApi, startInProcess } from './in-process.ts';
import type { TestStore, TestStoreInstance } from './stores.ts';
import { startReceiver } from './webhook-receiver.ts';

const MAIN = new URL('../../dist/main.js', import.meta.url).pathname;

/** Short schedules so that every fault plays out in about a second. */
export const FAST = {
  WEBHOOK_POLL_INTERVAL_MS: '50',
  WEBHOOK_BACKOFF_BASE_MS: '50',
  WEBHOOK_BACKOFF_MAX_MS: '200',
  WEBHOOK_TIMEOUT_MS: '1000',
  WEBHOOK_LEASE_MS: '1500',
};

/** `main.js webhooks failed`, run as an operator would, against the same store. */
export async function listFailed(env: Record<string, string>) {
  return promisify(execFile)(process.execPath, [MAIN, 'webhooks', 'failed'], {
    env: { PATH: process.env.PATH ?? '', API_TOKENS: TOKEN, ...env },
  });
}

/**
 * Stores, apis (in this process) and receivers for webhook tests, each undone after its test, newest first
 * (an afterEach this registers). `apiEnv` is added to every api's environment.
 */
export function webhookFixtures(apiEnv: Record<string, string> = {}) {
  const defer = deferAfterEach();
  return {
    defer,
    async setup(testStore: TestStore): Promise<TestStoreInstance> {
      const store = await testStore.setup();
      defer(() => store.teardown());
      return store;
    },
    async startApi(env: Record<string, string>, dataDir?: string): Promise<RunningApi> {
      const api = await startInProcess({ env: { ...apiEnv, ...env }, dataDir });
      defer(async () => {
        await api.stop();
        api.cleanup();
      });
      return api;
    },
    async receiver(...args: Parameters<typeof startReceiver>) {
      const started = await startReceiver(...args);
      defer(() => started.close());
      return started;
    },
  };
}
