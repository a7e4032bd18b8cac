import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tokenDigest } from '../../src/auth/tokens.ts';
import type { Scope } from '../../src/auth/scopes.ts';
import { loadConfig } from '../../src/config/config.ts';
import { createLogger } from '../../src/observability/log.ts';
import { startServer } from '../../src/server.ts';
import { openStore } from '../../src/store/open-store.ts';
import { TOKEN } from './http.ts';
import { perFile } from './per-file.ts';

/** What tests use of a running api, whether it runs in this process or in its own (api-process.ts). */
export type RunningApi = {
  url: string;
  /** The JSON log lines it wrote, one string each, in order. */
  logs: string[];
  dataDir: string;
  /** Shuts it down gracefully (as SIGTERM does) and closes its store. */
  stop(): Promise<unknown>;
  /** Removes the data directory (after stop). */
  cleanup(): void;
};

/** A token written to the store before start, as `main.js token create` would issue it. */
export type TestToken = { name: string; secret: string; scopes: readonly Scope[] };

/**
 * Starts the api in this process, wired as `main.js` wires it and with no build: the configuration
 * from `env` (with the same defaults as `startApiProcess`: production, 127.0.0.1, port 0, SQLite in
 * a fresh data directory, `TOKEN` as API_TOKENS), the store opened as main.ts opens it, the logger
 * of src/observability/log.ts writing into `logs`, and `startServer` from server.ts. For tests whose subject is
 * the HTTP contract; tests of the process itself (signals, exit codes, crashes, memory) use
 * `startApiProcess`.
 */
export async function startInProcess(
  options: {
    env?: Record<string, string>;
    dataDir?: string;
    /** API_TOKENS; `null` leaves it unset (on SQLite the service then generates a token). */
    token?: string | null;
    tokens?: readonly TestToken[];
    /** The console's built files for /app/ (`startServer`'s `webAppDir`). */
    webAppDir?: string;
  } = {},
): Promise<RunningApi> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'plant-store-'));
  const config = loadConfig({
    NODE_ENV: 'production',
    PORT: '0',
    HOST: '127.0.0.1',
    DATABASE_URL: `file:${join(dataDir, 'plants.db')}`,
    ...(options.token !== null && { API_TOKENS: options.token ?? TOKEN }),
    ...options.env,
  });
  const logs: string[] = [];
  const log = createLogger(config, {
    write(chunk: string) {
      for (const line of chunk.split('\n')) if (line !== '') logs.push(line);
    },
  });
  const store = await openStore(config.store);
  let running: Awaited<ReturnType<typeof startServer>>;
  try {
    for (const { name, secret, scopes } of options.tokens ?? []) {
      await store.tokens.create({ name, digest: tokenDigest(secret), scopes: [...scopes] });
    }
    running = await startServer(config, { store, log, webAppDir: options.webAppDir });
  } catch (error) {
    await store.close();
    throw error;
  }
  return {
    url: running.url,
    logs,
    dataDir,
    stop: () => running.close(),
    cleanup() {
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** One in-process api for a whole test file (`perFile`). */
export function inProcessPerFile(options: Parameters<typeof startInProcess>[0] = {}): RunningApi {
  return perFile(() => startInProcess(options));
}
