import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

const MAIN = new URL('../../dist/main.js', import.meta.url).pathname;

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
 * Starts the built api (`dist/main.js`, as `pnpm start` runs it) as a real process on an ephemeral
 * loopback port, and resolves once it logs that it is listening.
 */
export async function startApiProcess(
  options: { env?: Record<string, string>; dataDir?: string; token?: string } = {},
): Promise<ApiProcess> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'plant-store-'));
  const child = spawn(process.execPath, [MAIN], {
    env: {
      PATH: process.env.PATH ?? '',
      NODE_ENV: 'production',
      PORT: '0',
      HOST: '127.0.0.1',
      DATABASE_URL: `file:${join(dataDir, 'plants.db')}`,
      API_TOKENS: options.token ?? 'test-token',
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
    createInterface({ input: child.stdout! }).on('line', (line) => {
      logs.push(line);
      if (line.includes('"msg":"listening"')) resolve(JSON.parse(line).url);
    });
    child.once('exit', (code) => reject(new Error(`api exited with ${code} before listening: ${stderr}`)));
    setTimeout(() => reject(new Error(`api did not start within 10 s: ${stderr}`)), 10_000).unref();
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
