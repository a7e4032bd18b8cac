import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { perFile } from './per-file.ts';

const MAIN = new URL('../../dist/main.js', import.meta.url).pathname;
/** Node's flags as `pnpm start` passes them (apps/api/package.json), so tests run what users run. */
export const START_NODE_ARGS = ['--max-old-space-size=256', '--max-semi-space-size=16'];

export type ApiProcess = {
  url: string;
  child: ChildProcess;
  dataDir: string;
  /** Lines the process wrote to stdout (JSON log lines). */
  logs: string[];
  /** SIGTERM, then wait for exit; returns the exit code. */
  stop(): Promise<number | null>;
  /** SIGKILL, then wait for exit. */
  kill(): Promise<void>;
  /** Removes the data directory (after stop/kill). */
  cleanup(): void;
};

/**
 * Runs one command of the built api's CLI (`node dist/main.js migrate`, `… token list`) to its end,
 * as an operator runs it, with `env` over PATH and the test token in API_TOKENS. Resolves with its
 * stdout and stderr; rejects with them and its exit `code` when it exits non-zero.
 */
export function runApiCommand(args: string[], env: Record<string, string> = {}) {
  return promisify(execFile)(process.execPath, [MAIN, ...args], {
    env: { PATH: process.env.PATH ?? '', API_TOKENS: 'plant-store-test-token', ...env },
  });
}

/** The environment the built api runs with in tests: production, an ephemeral loopback port, SQLite in `dataDir`. */
export function apiProcessEnv(dataDir: string): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '',
    NODE_ENV: 'production',
    PORT: '0',
    HOST: '127.0.0.1',
    DATABASE_URL: `file:${join(dataDir, 'plants.db')}`,
  };
}

/**
 * Starts the built api (`dist/main.js`, as `pnpm start` runs it, with its heap cap) as a real
 * process on an ephemeral loopback port, and resolves once it logs that it is listening. For tests
 * whose subject is the process (signals, exit codes, kills, memory); the HTTP contract is tested
 * in-process, with no build (`startInProcess`).
 */
export async function startApiProcess(
  options: {
    env?: Record<string, string>;
    dataDir?: string;
    /** API_TOKENS; `null` leaves it unset (the service then generates a token). */
    token?: string | null;
  } = {},
): Promise<ApiProcess> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'plant-store-'));
  const child = spawn(process.execPath, [...START_NODE_ARGS, MAIN], {
    env: {
      ...apiProcessEnv(dataDir),
      ...(options.token !== null && { API_TOKENS: options.token ?? 'plant-store-test-token' }),
      ...options.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: string[] = [];
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    let stderr = '';
    child.stderr!.on('data', (chunk) => {
      stderr += chunk;
    });
    const timer = setTimeout(() => {
      // Nobody could stop a process whose start failed: do not leave it running.
      child.kill('SIGKILL');
      reject(new Error(`api did not start within 10 s: ${stderr}`));
    }, 10_000).unref();
    createInterface({ input: child.stdout! }).on('line', (line) => {
      logs.push(line);
      if (line.includes('"msg":"listening"')) {
        clearTimeout(timer);
        resolve(JSON.parse(line).url);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`api exited with ${code} before listening: ${stderr}`));
    });
  });
  return {
    url,
    child,
    dataDir,
    logs,
    async stop() {
      child.kill('SIGTERM');
      return exited;
    },
    async kill() {
      child.kill('SIGKILL');
      await exited;
    },
    cleanup() {
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** One api process for a whole test file (`perFile`). */
export function apiProcessPerFile(options: Parameters<typeof startApiProcess>[0] = {}): ApiProcess {
  return perFile(() => startApiProcess(options));
}
