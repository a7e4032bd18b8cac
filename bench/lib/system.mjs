// Processes for the bench: pinned spawning, the servers under test, the load worker, /proc sampling,
// loopback HTTP, and cleaning every child and temporary directory up on exit or ctrl-c.
import { execFileSync, spawn } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { createServer } from 'node:net';
import { cpus, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** The api build the bench runs; BENCH_API_MAIN names another (an earlier commit's worktree) to compare two. */
export const API_MAIN = process.env.BENCH_API_MAIN
  ? resolve(process.env.BENCH_API_MAIN)
  : join(ROOT, 'apps/api/dist/main.js');

/**
 * The node flags `pnpm start` runs the api with (its heap sizing), read from apps/api's start
 * script, so the bench measures the process users run.
 */
export const API_NODE_FLAGS = (() => {
  const { scripts } = JSON.parse(readFileSync(join(ROOT, 'apps/api/package.json'), 'utf8'));
  return (/\bnode ((?:--\S+ )*)dist\/main\.js/.exec(scripts.start)?.[1] ?? '')
    .trim()
    .split(/\s+/)
    .filter(Boolean);
})();
/** The `plants` command as users run it (bin/plants.js loads the built dist/cli.js). */
export const CLI = join(ROOT, 'packages/client/bin/plants.js');
export const CLI_MAIN = join(ROOT, 'packages/client/dist/cli.js');
export const BASELINE = join(ROOT, 'bench/baseline.mjs');
export const BASELINE_PG = join(ROOT, 'bench/baseline-pg.mjs');
export const KOA_FLOOR = join(ROOT, 'bench/koa-floor.mjs');
export const RECEIVER = join(ROOT, 'bench/receiver.mjs');
export const OTLP_RECEIVER = join(ROOT, 'bench/otlp-receiver.mjs');
export const LOAD = join(ROOT, 'bench/load.mjs');
export const STREAMS = join(ROOT, 'bench/streams.mjs');
export const HOST = '127.0.0.1';

// ---------------------------------------------------------------------------------------------
// Children and temporary directories: all tracked, all removed on exit, ctrl-c or a crash.

const children = new Set();
const tempDirs = new Set();
let keepDirs = false;

export function keepTemporaryDirectories(keep) {
  keepDirs = keep;
}

function track(child) {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

export function makeTempDir(prefix, base = tmpdir()) {
  const dir = mkdtempSync(join(resolve(base), `plant-store-bench-${prefix}-`));
  tempDirs.add(dir);
  return dir;
}

export function removeTempDir(dir) {
  if (keepDirs) return;
  rmSync(dir, { recursive: true, force: true });
  tempDirs.delete(dir);
}

function killEverything() {
  for (const child of children) {
    try {
      child.kill('SIGKILL');
    } catch {}
  }
  if (!keepDirs) for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
}

let installed = false;
export function installCleanup() {
  if (installed) return;
  installed = true;
  process.on('exit', killEverything);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.on(signal, () => {
      process.stderr.write(`\n${signal}: stopping ${children.size} child process(es) and cleaning up\n`);
      killEverything();
      process.exit(130);
    });
  }
}

// ---------------------------------------------------------------------------------------------
// CPU pinning with taskset.

export function tasksetPath() {
  for (const dir of (process.env.PATH ?? '').split(':')) {
    const candidate = join(dir || '.', 'taskset');
    if (existsSync(candidate)) return candidate;
  }
  return undefined;
}

/**
 * How the bench pins processes: the server to one core, the load generator (and this harness,
 * which mostly waits) to another. Off when taskset is missing, fewer than 2 cores, or BENCH_PIN=0.
 */
export function pinningPlan(env) {
  const taskset = tasksetPath();
  const cores = cpus().length;
  const serverCpu = Number(env.BENCH_SERVER_CPU ?? 0);
  const loadCpu = Number(env.BENCH_LOAD_CPU ?? 1);
  const wanted = env.BENCH_PIN !== '0';
  const enabled = wanted && taskset !== undefined && cores >= 2 && serverCpu !== loadCpu;
  const why = !wanted
    ? 'BENCH_PIN=0'
    : taskset === undefined
      ? 'taskset not found'
      : cores < 2
        ? 'fewer than 2 cores'
        : serverCpu === loadCpu
          ? 'BENCH_SERVER_CPU equals BENCH_LOAD_CPU'
          : undefined;
  return { enabled, taskset, serverCpu, loadCpu, why };
}

let pinning = { enabled: false };
export function setPinning(plan) {
  pinning = plan;
  if (plan.enabled) {
    // The harness itself (HTTP polling in the cold-start bench, /proc sampling) stays off the
    // server's core.
    try {
      execFileSync(plan.taskset, ['-a', '-p', '-c', String(plan.loadCpu), String(process.pid)], {
        stdio: 'ignore',
      });
    } catch {}
  }
}

/** Spawns `node <args>` pinned to `cpu` when pinning is on; the child's pid is node's (taskset execs). */
function spawnNode(cpu, args, options) {
  if (cpu === 'load') cpu = pinning.loadCpu;
  if (pinning.enabled) {
    return track(spawn(pinning.taskset, ['-c', String(cpu), process.execPath, ...args], options));
  }
  return track(spawn(process.execPath, args, options));
}

// ---------------------------------------------------------------------------------------------
// Loopback HTTP.

export function freePort() {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, HOST, () => {
      const { port } = server.address();
      server.close(() => resolvePort(port));
    });
  });
}

/** One request on a fresh connection. Resolves with status and text; rejects on a socket error. */
export function send(url, { method = 'GET', path = '/', headers = {}, body } = {}, timeoutMs = 10_000) {
  return new Promise((resolveAnswer, reject) => {
    const target = new URL(path, url);
    const req = httpRequest(
      {
        host: target.hostname,
        port: target.port,
        path: `${target.pathname}${target.search}`,
        method,
        agent: false,
        headers: body === undefined ? headers : { ...headers, 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        const chunks = [];
        res.on('data', (chunk) => chunks.push(chunk));
        res.on('end', () =>
          resolveAnswer({
            status: res.statusCode,
            headers: res.headers,
            text: Buffer.concat(chunks).toString('utf8'),
          }),
        );
        res.on('error', reject);
      },
    );
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end(body);
  });
}

// ---------------------------------------------------------------------------------------------
// Servers under test.

function pick(env, names) {
  return Object.fromEntries(names.filter((name) => env[name] !== undefined).map((name) => [name, env[name]]));
}

/**
 * The environment of each server kind. `api`: the built api in production mode with logging on at
 * the default level; `databaseUrl` is `file:<path>` (SQLite) or `postgres://…`.
 */
function serverCommand(kind, { port, token, dir, databaseUrl, env: extraEnv = {} }) {
  const base = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? dir };
  if (kind === 'api') {
    return {
      script: API_MAIN,
      flags: API_NODE_FLAGS,
      env: {
        ...base,
        NODE_ENV: 'production',
        PORT: String(port),
        HOST,
        DATABASE_URL: databaseUrl ?? `file:${join(dir, 'plants.db')}`,
        API_TOKENS: token,
        LOG_LEVEL: 'info',
        // The per-token rate limiter stays on (its cost is measured), with a limit no run reaches.
        RATE_LIMIT_MAX: '1000000000',
        // PostgreSQL pool tuning, when the developer sets it for the bench.
        ...pick(process.env, ['DATABASE_POOL_SIZE', 'DATABASE_TIMEOUT_MS']),
        ...extraEnv,
      },
    };
  }
  if (kind === 'baseline-pg') {
    return {
      script: BASELINE_PG,
      env: { ...base, PORT: String(port), API_TOKENS: token, DATABASE_URL: databaseUrl },
    };
  }
  if (kind === 'receiver') return { script: RECEIVER, env: { ...base, PORT: String(port) } };
  if (kind === 'otlp-receiver') return { script: OTLP_RECEIVER, env: { ...base, PORT: String(port) } };
  if (kind === 'baseline' || kind === 'baseline-koa') {
    return {
      script: kind === 'baseline' ? BASELINE : KOA_FLOOR,
      env: {
        ...base,
        PORT: String(port),
        API_TOKENS: token,
        DATABASE_FILE: join(dir, 'plants.db'),
        ...extraEnv,
      },
    };
  }
  throw new Error(`unknown server kind ${kind}`);
}

/**
 * Spawns a server pinned to the server core, stdout (the api's JSON log lines) to `<dir>/<kind>.log`
 * or nowhere. Resolves once it is spawned; call `ready()` to wait until it answers HTTP.
 */
export async function spawnServer(
  kind,
  { dir, token, databaseUrl, logToFile = true, port, env: extraEnv, flags: extraFlags = [], cpu },
) {
  port ??= await freePort();
  const { script, env, flags = [] } = serverCommand(kind, { port, token, dir, databaseUrl, env: extraEnv });
  const logFile = logToFile ? join(dir, `${kind}.log`) : undefined;
  const out = logFile ? openSync(logFile, 'a') : 'ignore';
  const child = spawnNode(cpu ?? pinning.serverCpu, [...flags, ...extraFlags, script], {
    env,
    stdio: ['ignore', out, 'pipe'],
    cwd: dir,
  });
  if (typeof out === 'number') closeSync(out);
  let stderr = '';
  child.stderr.on('data', (chunk) => {
    stderr = (stderr + chunk).slice(-4000);
  });
  let exit;
  const exited = new Promise((resolveExit) =>
    child.once('exit', (code, signal) => {
      exit = { code, signal };
      resolveExit(exit);
    }),
  );
  const url = `http://${HOST}:${port}`;
  return {
    kind,
    child,
    pid: child.pid,
    port,
    url,
    logFile,
    stderr: () => stderr,
    exited: () => exit,
    /** Resolves when the server answers any HTTP request. */
    async ready(timeoutMs = 30_000) {
      const deadline = performance.now() + timeoutMs;
      for (;;) {
        if (exit)
          throw new Error(`${kind} exited (${exit.code ?? exit.signal}) before answering: ${stderr.trim()}`);
        try {
          await send(url, { method: 'GET', path: '/' }, 2000);
          return;
        } catch {}
        if (performance.now() > deadline)
          throw new Error(`${kind} did not answer within ${timeoutMs} ms: ${stderr.trim()}`);
        await sleep(5);
      }
    },
    /** SIGTERM, then SIGKILL after `graceMs`; resolves with how it exited. */
    async stop(graceMs = 15_000) {
      if (exit) return exit;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      const result = await exited;
      clearTimeout(timer);
      return result;
    },
  };
}

// ---------------------------------------------------------------------------------------------
// The load worker.

/** Calls `onLine` with each non-empty line of `stream`, parsed as JSON. */
function onJsonLines(stream, onLine) {
  createInterface({ input: stream }).on('line', (line) => {
    if (line.trim() !== '') onLine(JSON.parse(line));
  });
}

/**
 * Runs bench/load.mjs pinned to the load core. `onMeasuring` is called when the warm-up is over.
 * Resolves with the worker's result object.
 */
export function runLoad(config, { onMeasuring } = {}) {
  return new Promise((resolveResult, reject) => {
    const child = spawnNode(pinning.loadCpu, [LOAD, JSON.stringify(config)], {
      stdio: ['ignore', 'pipe', 'pipe'],
      cwd: ROOT,
    });
    let stderr = '';
    let result;
    onJsonLines(child.stdout, (event) => {
      if (event.event === 'measuring') onMeasuring?.();
      else if (event.event === 'done') result = event.result;
    });
    child.stderr.on('data', (chunk) => {
      stderr = (stderr + chunk).slice(-4000);
    });
    const limit = (config.warmup + config.duration + 60) * 1000;
    const timer = setTimeout(() => child.kill('SIGKILL'), limit);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      if (result && code === 0) resolveResult(result);
      else reject(new Error(`load generator exited (${code ?? signal}): ${stderr.trim()}`));
    });
  });
}

/**
 * Runs the `plants` command with `args`, pinned to the load core like the load generator, with
 * only PATH, HOME and `env` in its environment; `stdout` is 'pipe' (collected) or a file
 * descriptor. Resolves when it exits with its exit status, wall seconds, the stderr tail, the
 * collected stdout and its CPU seconds, read from /proc every 100 ms while it runs (so up to
 * 100 ms short; null where there is no /proc).
 */
export function runCli(args, { env, stdout = 'pipe', timeoutMs = 600_000 }) {
  return new Promise((resolveRun, reject) => {
    const started = performance.now();
    const child = spawnNode(pinning.loadCpu, [CLI, ...args], {
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/', ...env },
      stdio: ['ignore', stdout, 'pipe'],
      cwd: ROOT,
    });
    let out = '';
    child.stdout?.setEncoding('utf8').on('data', (chunk) => {
      out += chunk;
    });
    let stderr = '';
    child.stderr.on('data', (chunk) => {
      stderr = (stderr + chunk).slice(-4000);
    });
    let cpuSeconds = null;
    const sample = () => {
      const stats = processStats(child.pid);
      if (stats && Number.isFinite(stats.cpuSeconds)) cpuSeconds = stats.cpuSeconds;
    };
    const sampler = setInterval(sample, 100);
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', (error) => {
      clearInterval(sampler);
      clearTimeout(timer);
      reject(error);
    });
    // 'close': the process has exited and its stdout and stderr are read to the end.
    child.once('close', (code, signal) => {
      clearInterval(sampler);
      clearTimeout(timer);
      resolveRun({
        code,
        signal,
        seconds: (performance.now() - started) / 1000,
        stdout: out,
        stderr: stderr.trim(),
        cpuSeconds,
      });
    });
  });
}

/**
 * Starts bench/streams.mjs (open SSE streams, paced creates) pinned to the load core. `ask(message)`
 * sends one command and resolves with its answer (rejects on an error answer, an exit, or after
 * `timeoutMs`); `stop()` ends it.
 */
export function startStreamsWorker({ profileDir } = {}) {
  const flags = profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [];
  const child = spawnNode(pinning.loadCpu, [...flags, STREAMS], {
    stdio: ['pipe', 'pipe', 'pipe'],
    cwd: ROOT,
  });
  let stderr = '';
  let waiting;
  onJsonLines(child.stdout, (answer) => {
    const settle = waiting;
    waiting = undefined;
    if (answer.event === 'error') settle?.reject(new Error(`streams worker: ${answer.message}`));
    else settle?.resolve(answer);
  });
  child.stderr.on('data', (chunk) => {
    stderr = (stderr + chunk).slice(-4000);
  });
  const exited = new Promise((resolveExit) =>
    child.once('exit', (code, signal) => {
      waiting?.reject(new Error(`streams worker exited (${code ?? signal}): ${stderr.trim()}`));
      waiting = undefined;
      resolveExit();
    }),
  );
  return {
    pid: child.pid,
    exited,
    ask(message, timeoutMs = 120_000) {
      return new Promise((resolveAnswer, reject) => {
        const timer = setTimeout(() => {
          waiting = undefined;
          reject(new Error(`streams worker: no answer to ${message.cmd} within ${timeoutMs} ms`));
        }, timeoutMs);
        waiting = {
          resolve: (answer) => {
            clearTimeout(timer);
            resolveAnswer(answer);
          },
          reject: (error) => {
            clearTimeout(timer);
            reject(error);
          },
        };
        child.stdin.write(`${JSON.stringify(message)}\n`);
      });
    },
    stop() {
      child.kill('SIGKILL');
    },
  };
}

// ---------------------------------------------------------------------------------------------
// /proc sampling.

let clockTicks;
function ticksPerSecond() {
  if (clockTicks === undefined) {
    try {
      clockTicks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      clockTicks = 100;
    }
  }
  return clockTicks;
}

/** RSS, peak RSS (VmHWM) in kB and CPU seconds so far of a live process; undefined when unknown. */
export function processStats(pid) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (field) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN);
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces) start at field 3; utime, stime are 14, 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const cpuSeconds = (Number(fields[11]) + Number(fields[12])) / ticksPerSecond();
    return { rssKb: kb('VmRSS'), hwmKb: kb('VmHWM'), cpuSeconds };
  } catch {
    // No /proc (macOS): ps gives the RSS, not the peak nor CPU.
    try {
      const rssKb = Number(
        execFileSync('ps', ['-o', 'rss=', '-p', String(pid)], { encoding: 'utf8' }).trim(),
      );
      return Number.isFinite(rssKb) && rssKb > 0
        ? { rssKb, hwmKb: Number.NaN, cpuSeconds: Number.NaN }
        : undefined;
    } catch {
      return undefined;
    }
  }
}

/** Samples a process's RSS every `everyMs`; `stop()` returns the samples and the peak. */
export function sampleMemory(pid, everyMs) {
  const started = performance.now();
  const samples = [];
  let peakKb = 0;
  const take = () => {
    const stats = processStats(pid);
    if (!stats) return;
    samples.push({ t: Math.round(performance.now() - started) / 1000, rssKb: stats.rssKb });
    peakKb = Math.max(peakKb, stats.rssKb, Number.isFinite(stats.hwmKb) ? stats.hwmKb : 0);
  };
  take();
  const timer = setInterval(take, everyMs);
  return {
    stop() {
      take();
      clearInterval(timer);
      return { samples, peakKb };
    },
  };
}

// ---------------------------------------------------------------------------------------------

export function sleep(ms) {
  return new Promise((resolveSleep) => setTimeout(resolveSleep, ms));
}

/** The file system type a path lives on (from /proc/mounts), e.g. ext4 or tmpfs. */
export function fileSystemOf(path) {
  try {
    const target = resolve(path);
    let best = { mount: '', type: undefined };
    for (const line of readFileSync('/proc/mounts', 'utf8').split('\n')) {
      const [, mount, type] = line.split(' ');
      if (!mount) continue;
      const prefix = mount.endsWith('/') ? mount : `${mount}/`;
      if ((target === mount || target.startsWith(prefix)) && mount.length >= best.mount.length)
        best = { mount, type };
    }
    return best.type;
  } catch {
    return undefined;
  }
}
