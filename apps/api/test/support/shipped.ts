import { execFile, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { describeProcess, killAll, type ProcessInfo, processesOf } from './processes.ts';

/** The repository's root, where the README's commands run. */
export const ROOT = new URL('../../../../', import.meta.url).pathname;

/** How the README runs pnpm: a newcomer has no pnpm of their own. */
export const PNPM = 'npx -y pnpm@10.34.8';

/**
 * Variables a shipped run must not inherit from the test runner: each run sets exactly the
 * configuration the README documents for it, nothing else.
 */
const CONFIGURATION = [
  'API_TOKENS',
  'CORS_ORIGINS',
  'DATABASE_URL',
  'HOST',
  'LOG_LEVEL',
  'NODE_ENV',
  'PORT',
  'REDIS_URL',
  'WEBHOOK_SECRET',
  'WEBHOOK_URLS',
];

/** The runner's environment without any api configuration, plus `env`. */
export function userEnv(env: Record<string, string> = {}): NodeJS.ProcessEnv {
  const inherited = { ...process.env };
  for (const name of Object.keys(inherited)) {
    if (CONFIGURATION.includes(name) || name.startsWith('WEBHOOK_') || name.startsWith('VITEST'))
      delete inherited[name];
  }
  return { ...inherited, ...env };
}

/** Where a README line runs (`cwd`, the root by default) and the configuration it is given (`env`). */
export type ShellOptions = { cwd?: string; env?: Record<string, string> };

/** The child-process options for running a README line as a user would: `cwd`, and `userEnv(env)`. */
const asUser = ({ cwd = ROOT, env = {} }: ShellOptions) => ({ cwd, env: userEnv(env) });

/** The README's lines of shell, comments and blank lines dropped, from every ```sh block. */
export function readmeShellLines(root = ROOT): string[] {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  return [...readme.matchAll(/```sh\n([\s\S]*?)```/g)].flatMap(([, block]) =>
    block!
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line !== '' && !line.startsWith('#')),
  );
}

export type ShippedService = {
  url: string;
  /** The command line, with its variables, as the test ran it (for the note and failures). */
  commandLine: string;
  /** Every line the run printed (turbo's, pnpm's and the api's), stdout and stderr. */
  output: string[];
  /** The api's JSON log lines, parsed. */
  logs: Record<string, unknown>[];
  /** The shell running the command: its pid is the id of the command's process group and session. */
  pid: number;
  /** The running processes the command started, whatever their process group (`processesOf`). */
  processes(): ProcessInfo[];
  /** Whether any process the command started still runs. */
  alive(): boolean;
  /** Sends `signal` to the command's process group (`kill -SIGNAL -- -PGID`), as a supervisor does. */
  signal(signal: NodeJS.Signals): void;
  /** The shell's exit: its code, or the signal that ended it. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Once every process holding the command's output has exited and each of its lines is in `logs`. */
  closed: Promise<void>;
  /**
   * Sends `signal` to the whole process group, as a terminal's Ctrl-C (SIGINT) or a supervisor
   * stopping the service (SIGTERM) does, and resolves once every process the command started has
   * exited and its output is read; after 30 s it kills them and rejects.
   */
  stop(signal: 'SIGINT' | 'SIGTERM'): Promise<void>;
};

/**
 * Runs `command` (a README line) through bash in `cwd` with `env`, in a process group of its own,
 * and resolves once the api it starts logs that it is listening.
 */
export async function startShipped(
  command: string,
  options: ShellOptions & { startTimeoutMs?: number } = {},
): Promise<ShippedService> {
  const { env = {}, startTimeoutMs = 240_000 } = options;
  const child = spawn('bash', ['-c', command], {
    ...asUser(options),
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  const logs: Record<string, unknown>[] = [];
  const commandLine = `${Object.entries(env)
    .map(([name, value]) => `${name}=${value}`)
    .join(' ')} ${command}`.trim();
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
  const url = await new Promise<string>((resolve, reject) => {
    const onLine = (line: string) => {
      output.push(line);
      const at = line.indexOf('{"level"');
      if (at < 0) return;
      const entry = JSON.parse(line.slice(at)) as Record<string, unknown>;
      logs.push(entry);
      if (entry.msg === 'listening') resolve(entry.url as string);
    };
    createInterface({ input: child.stdout! }).on('line', onLine);
    createInterface({ input: child.stderr! }).on('line', onLine);
    child.once('exit', (code) =>
      reject(new Error(`${commandLine} exited with ${code} before listening:\n${output.join('\n')}`)),
    );
    setTimeout(
      () =>
        reject(new Error(`${commandLine} did not listen within ${startTimeoutMs} ms:\n${output.join('\n')}`)),
      startTimeoutMs,
    ).unref();
  });
  const pid = child.pid!;
  return {
    url,
    commandLine,
    output,
    logs,
    pid,
    exited,
    closed,
    processes: () => processesOf(pid),
    alive: () => processesOf(pid).length > 0,
    signal: (signal) => signalGroup(pid, signal),
    async stop(signal) {
      signalGroup(pid, signal);
      const deadline = Date.now() + 30_000;
      while (processesOf(pid).length > 0) {
        if (Date.now() > deadline) {
          const left = processesOf(pid);
          killAll(pid);
          throw new Error(
            `${commandLine}: processes left 30 s after ${signal}:\n${left.map(describeProcess).join('\n')}\n${output.join('\n')}`,
          );
        }
        await sleep(100);
      }
      await closed;
    },
  };
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // the group is gone already
  }
}

export type Run = { code: number; stdout: string; stderr: string };

/** Runs one README command line to completion through bash. */
export async function runShipped(
  command: string,
  options: ShellOptions & { timeoutMs?: number } = {},
): Promise<Run> {
  try {
    const { stdout, stderr } = await promisify(execFile)('bash', ['-c', command], {
      ...asUser(options),
      timeout: options.timeoutMs ?? 120_000,
      maxBuffer: 16 * 1024 * 1024,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const { code, stdout, stderr } = error as { code: number; stdout: string; stderr: string };
    return { code, stdout, stderr };
  }
}

/**
 * Light traffic against running services until `until` (ms since the epoch): every `everyMs`, a
 * create, a read of it and a health probe on each. Resolves with every failure seen (none, when
 * all is well) and the number of rounds.
 */
export async function lightTraffic(
  targets: { url: string; token: string }[],
  { until, everyMs = 1_000, firstId }: { until: number; everyMs?: number; firstId: bigint },
): Promise<{ rounds: number; failures: string[] }> {
  const failures: string[] = [];
  let rounds = 0;
  let id = firstId;
  while (Date.now() < until) {
    for (const { url, token } of targets) {
      id += 1n;
      const auth = { authorization: `Bearer ${token}` };
      try {
        const created = await fetch(`${url}/plants`, {
          method: 'POST',
          headers: { ...auth, 'content-type': 'application/json' },
          body: `{"id":${id},"name":"Traffic ${id}"}`,
          signal: AbortSignal.timeout(5_000),
        });
        const createdBody = await created.text();
        if (created.status !== 200 || createdBody !== `{"name":"Traffic ${id}"}`)
          failures.push(`${url} POST /plants ${id}: ${created.status} ${createdBody}`);
        const read = await fetch(`${url}/plants/${id}`, {
          headers: auth,
          signal: AbortSignal.timeout(5_000),
        });
        const readBody = await read.text();
        // The version the create's ETag gave the plant.
        const version = created.headers.get('etag')?.slice(1, -1);
        if (read.status !== 200 || readBody !== `{"id":${id},"name":"Traffic ${id}","version":${version}}`)
          failures.push(`${url} GET /plants/${id}: ${read.status} ${readBody}`);
        const health = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(5_000) });
        if (health.status !== 200) failures.push(`${url} GET /healthz: ${health.status}`);
        await health.text();
      } catch (error) {
        failures.push(`${url}: ${String(error)}`);
      }
    }
    rounds += 1;
    await sleep(everyMs);
  }
  return { rounds, failures };
}
