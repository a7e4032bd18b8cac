// Processes for the bench: the servers under test and the workers, pinned to their cores with
// taskset; loopback HTTP; /proc sampling; every child and temporary directory removed on exit or
// ctrl-c.
import { execFileSync, spawn } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { createServer } from 'node:net';
import { cpus, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** The api build the bench runs; BENCH_API_MAIN names another (say, an earlier commit's worktree). */
export const API_MAIN = resolve(process.env.BENCH_API_MAIN || join(ROOT, 'apps/api/dist/main.js'));
/** The node flags of `pnpm start` (its heap sizing), read from apps/api's start script. */
export const API_NODE_FLAGS = (() => {
  const { scripts } = JSON.parse(readFileSync(join(ROOT, 'apps/api/package.json'), 'utf8'));
  return (/\bnode ((?:--\S+ )*)dist\/main\.js/.exec(scripts.start)?.[1] ?? '').split(' ').filter(Boolean);
})();
/** The `plants` command as users run it (bin/plants.js loads the built dist/cli.js). */
export const CLI = join(ROOT, 'packages/client/bin/plants.js');
export const CLI_MAIN = join(ROOT, 'packages/client/dist/cli.js');
export const HOST = '127.0.0.1';
const SCRIPTS = {
  baseline: join(ROOT, 'bench/baseline.mjs'),
  'baseline-pg': join(ROOT, 'bench/baseline-pg.mjs'),
  receiver: join(ROOT, 'bench/receiver.mjs'),
};

// Children and temporary directories: tracked, and removed on exit, ctrl-c or a crash.
const children = new Set();
const tempDirs = new Set();
let keepDirs = false;

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
  for (const child of children) child.kill('SIGKILL');
  if (!keepDirs) for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
}

/** Cleans up on exit and on a signal; `keep`: leave the data directories (and logs) behind. */
export function installCleanup(keep) {
  keepDirs = keep;
  process.on('exit', killEverything);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.on(signal, () => {
      process.stderr.write(`\n${signal}: stopping ${children.size} child process(es)\n`);
      killEverything();
      process.exit(130);
    });
  }
}

// Pinning: the server on one core, the load generator, the workers and this harness on another.
let pinning = { enabled: false };

/** Pins as BENCH_PIN, BENCH_SERVER_CPU and BENCH_LOAD_CPU say; returns the plan, with `why` when off. */
export function setPinning(env) {
  const taskset = (env.PATH ?? '')
    .split(':')
    .map((dir) => join(dir || '.', 'taskset'))
    .find(existsSync);
  const serverCpu = Number(env.BENCH_SERVER_CPU ?? 0);
  const loadCpu = Number(env.BENCH_LOAD_CPU ?? 1);
  const why =
    env.BENCH_PIN === '0'
      ? 'BENCH_PIN=0'
      : !taskset
        ? 'taskset not found'
        : cpus().length < 2
          ? 'fewer than 2 cores'
          : serverCpu === loadCpu
            ? 'BENCH_SERVER_CPU equals BENCH_LOAD_CPU'
            : undefined;
  pinning = { enabled: !why, taskset, serverCpu, loadCpu, why };
  try {
    if (pinning.enabled)
      execFileSync(taskset, ['-a', '-p', '-c', String(loadCpu), String(process.pid)], { stdio: 'ignore' });
  } catch (error) {
    pinning = { enabled: false, why: `taskset failed: ${error.message}` };
  }
  return pinning;
}

/** `node <args>` pinned to `cpu` ('server' or 'load'); the child's pid is node's (taskset execs). */
function spawnNode(cpu, args, options) {
  const core = cpu === 'server' ? pinning.serverCpu : pinning.loadCpu;
  const child = pinning.enabled
    ? spawn(pinning.taskset, ['-c', String(core), process.execPath, ...args], options)
    : spawn(process.execPath, args, options);
  children.add(child);
  child.once('exit', () => children.delete(child));
  let stderr = '';
  child.stderr?.on('data', (chunk) => {
    stderr = (stderr + chunk).slice(-4000);
  });
  child.stderrTail = () => stderr.trim();
  return child;
}

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

/** One request on a fresh connection: resolves with status and text, rejects on a socket error. */
export function send(url, { method = 'GET', path = '/', headers = {}, body } = {}, timeoutMs = 10_000) {
  return new Promise((resolveAnswer, reject) => {
    const target = new URL(path, url);
    const length = body === undefined ? {} : { 'content-length': Buffer.byteLength(body) };
    const req = httpRequest(target, { method, agent: false, headers: { ...headers, ...length } }, (res) => {
      const chunks = [];
      res.on('data', (chunk) => chunks.push(chunk));
      res.on('end', () =>
        resolveAnswer({ status: res.statusCode, text: Buffer.concat(chunks).toString('utf8') }),
      );
      res.on('error', reject);
    });
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end(body);
  });
}

const POOL_SETTINGS = ['DATABASE_POOL_SIZE', 'DATABASE_TIMEOUT_MS'];

export const sleep = (ms) => new Promise((resolveSleep) => setTimeout(resolveSleep, ms));

/**
 * Spawns a server on the server core (the receiver on the load core): `api` is the built api in
 * production mode on `databaseUrl` (default a SQLite file in `dir`), its log in `<dir>/api.log`.
 * Call `ready()` to wait until it answers HTTP, `stop()` to end it.
 */
export async function spawnServer(kind, { dir, token, databaseUrl, env = {}, flags = [], log = true }) {
  const port = await freePort();
  const base = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? dir, PORT: String(port), HOST };
  const api = kind === 'api';
  const childEnv = {
    ...base,
    API_TOKENS: token,
    DATABASE_URL: databaseUrl ?? (api ? `file:${join(dir, 'plants.db')}` : undefined),
    DATABASE_FILE: join(dir, 'plants.db'),
    ...(api && {
      NODE_ENV: 'production',
      LOG_LEVEL: 'info',
      // The per-token rate limiter stays on (its cost is measured), with a limit no run reaches.
      RATE_LIMIT_MAX: '1000000000',
      // The developer's PostgreSQL pool tuning, when set.
      ...Object.fromEntries(POOL_SETTINGS.filter((k) => process.env[k]).map((k) => [k, process.env[k]])),
    }),
    ...env,
  };
  for (const key of Object.keys(childEnv)) if (childEnv[key] === undefined) delete childEnv[key];
  const logFile = api && log ? join(dir, 'api.log') : undefined;
  const out = logFile ? openSync(logFile, 'a') : 'ignore';
  const args = api ? [...API_NODE_FLAGS, ...flags, API_MAIN] : [SCRIPTS[kind]];
  const child = spawnNode(kind === 'receiver' ? 'load' : 'server', args, {
    env: childEnv,
    stdio: ['ignore', out, 'pipe'],
    cwd: dir,
  });
  if (logFile) closeSync(out);
  let exit;
  const exited = new Promise((resolveExit) =>
    child.once('exit', (code, signal) => {
      exit = { code, signal };
      resolveExit(exit);
    }),
  );
  const url = `http://${HOST}:${port}`;
  return {
    pid: child.pid,
    url,
    logFile,
    exited: () => exit,
    stderr: child.stderrTail,
    async ready(timeoutMs = 30_000) {
      const deadline = performance.now() + timeoutMs;
      for (;;) {
        if (exit) throw new Error(`${kind} exited (${exit.code ?? exit.signal}): ${child.stderrTail()}`);
        try {
          return await send(url, {}, 2000);
        } catch {}
        if (performance.now() > deadline) throw new Error(`${kind} did not answer within ${timeoutMs} ms`);
        await sleep(5);
      }
    },
    /** SIGTERM, then SIGKILL after 15 s; resolves with how it exited. */
    async stop() {
      if (exit) return exit;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
      return exit;
    },
  };
}

/**
 * A worker, a script of bench/ on the load core that speaks JSON lines: `send(message)` writes one
 * to its stdin, `next(timeoutMs)` resolves with the next it writes (rejects once it has exited).
 */
export function startWorker(script, args = []) {
  const child = spawnNode('load', [join(ROOT, 'bench', script), ...args], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const queue = [];
  const waiting = [];
  let ended;
  createInterface({ input: child.stdout }).on('line', (line) => {
    const message = JSON.parse(line);
    if (waiting.length > 0) waiting.shift().resolve(message);
    else queue.push(message);
  });
  child.once('exit', (code, signal) => {
    ended = new Error(`${script} exited (${code ?? signal}): ${child.stderrTail()}`);
    for (const w of waiting.splice(0)) w.reject(ended);
  });
  return {
    send: (message) => child.stdin.write(`${JSON.stringify(message)}\n`),
    next(timeoutMs) {
      if (queue.length > 0) return Promise.resolve(queue.shift());
      if (ended) return Promise.reject(ended);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
        const settle = (f) => (value) => {
          clearTimeout(timer);
          f(value);
        };
        waiting.push({ resolve: settle(resolve), reject: settle(reject) });
      });
    },
    stop: () => child.kill('SIGKILL'),
  };
}

/** Runs bench/load.mjs with `config`; `onMeasuring` is called when its warm-up is over. */
export async function runLoad(config, { onMeasuring }) {
  const worker = startWorker('load.mjs', [JSON.stringify(config)]);
  const limit = (config.warmup + config.duration + 60) * 1000;
  try {
    await worker.next(limit);
    onMeasuring();
    return (await worker.next(limit)).result;
  } finally {
    worker.stop();
  }
}

/**
 * Runs the `plants` command on the load core with only PATH, HOME and `env` in its environment;
 * `stdout`: 'pipe' (collected) or a file descriptor. Resolves with its exit code, wall seconds,
 * stdout, stderr and CPU seconds (read from /proc every 100 ms, so up to 100 ms short).
 */
export function runCli(args, { env, stdout = 'pipe', timeoutMs }) {
  return new Promise((resolveRun, reject) => {
    const started = performance.now();
    const child = spawnNode('load', [CLI, ...args], {
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/', ...env },
      stdio: ['ignore', stdout, 'pipe'],
    });
    let out = '';
    child.stdout?.setEncoding('utf8').on('data', (chunk) => {
      out += chunk;
    });
    let cpuSeconds = null;
    const sampler = setInterval(() => {
      cpuSeconds = processStats(child.pid)?.cpuSeconds ?? cpuSeconds;
    }, 100);
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    const done = () => {
      clearInterval(sampler);
      clearTimeout(timer);
    };
    child.once('error', (error) => {
      done();
      reject(error);
    });
    child.once('close', (code, signal) => {
      done();
      const seconds = (performance.now() - started) / 1000;
      resolveRun({ code: code ?? signal, seconds, stdout: out, stderr: child.stderrTail(), cpuSeconds });
    });
  });
}

const CLOCK_TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' })) || 100;
  } catch {
    return 100;
  }
})();

/** RSS and peak RSS (VmHWM) in MiB and CPU seconds so far of a live process; undefined without /proc. */
export function processStats(pid) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const mib = (field) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1]) / 1024;
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The fields after the command name (which may hold spaces); utime and stime are 14 and 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return {
      rssMb: mib('VmRSS'),
      peakMb: mib('VmHWM'),
      cpuSeconds: (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS,
    };
  } catch {
    return undefined;
  }
}

/** Samples a process's RSS every `everyMs`; `stop()` returns the samples ({t: s, mb}) and the peak. */
export function sampleMemory(pid, everyMs) {
  const started = performance.now();
  const samples = [];
  let peakMb = 0;
  const take = () => {
    const stats = processStats(pid);
    if (!stats) return;
    samples.push({ t: (performance.now() - started) / 1000, mb: stats.rssMb });
    peakMb = Math.max(peakMb, stats.rssMb, stats.peakMb);
  };
  take();
  const timer = setInterval(take, everyMs);
  return {
    stop() {
      take();
      clearInterval(timer);
      return { samples, peakMb };
    },
  };
}
