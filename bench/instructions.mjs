// Instructions per request of one scenario, counted by valgrind's callgrind, on a machine too
// loaded for req/s or CPU time to mean much. For comparing two builds of the api (a dependency
// patched or not, a code path or another), in alternation and several runs each; not for absolute
// speed (one request at a time, no batching). The warm-up must let V8 finish optimizing: after
// 2,000 requests its compiler was still 15-28% of a GET's or a create's count, and runs of one
// build differed by 10%; after 8,000 (the default), by about 1%. Two builds compare only over many
// requests (20,000): over 3,000, a major GC falls inside one build's window and not the other's as
// their allocations differ by a little, and moved a PATCH's count by 5-7% (callgrind_annotate on
// BENCH_INSTRUCTIONS_DUMP showed the collector's marking in one and not the other).
//
//   node bench/instructions.mjs <rest|trpc|trpc-batch|get|list|patch|webhook> [requests] [warm-up requests]
//
// `webhook`: `rest` with one subscriber (bench/receiver.mjs); the count runs until the receiver has
// every measured create's delivery and its outcome is written, so it is a create plus its delivery.
//
// Starts the built api (BENCH_API_MAIN, default apps/api/dist/main.js; bench/koa-floor.mjs counts the
// Koa floor's `rest` and `get`) under callgrind with
// instrumentation off, sends the warm-up requests (and, for `get` and `patch`, first creates the
// plants they use), switches instrumentation on, sends the measured requests (one at a time,
// kept-alive), dumps and prints the instructions per request (user space only: the kernel's share
// is not counted).
//
// BENCH_INSTRUCTIONS_DUMP=<file> keeps callgrind's dump there (and V8's map of its machine code
// beside it, <file>.map): `node bench/annotate.mjs <file>` lists where the instructions went by
// function, JavaScript included; `--callers <function>` who called one.

import { spawn, spawnSync } from 'node:child_process';
import {
  copyFileSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { API_MAIN, API_NODE_FLAGS } from './lib/system.mjs';
import { buildRequest, createsPerRequest, restBody } from './lib/workload.mjs';

const [scenario = 'rest', requestsArg = '3000', warmupArg = '8000'] = process.argv.slice(2);
const requests = Number(requestsArg);
const warmup = Number(warmupArg);
/** Requests in flight at once (BENCH_INSTRUCTIONS_CONNECTIONS): 1 keeps the count repeatable. */
const CONCURRENCY = Number(process.env.BENCH_INSTRUCTIONS_CONNECTIONS ?? 1);
const BATCH = 10;
const TOKEN = 'instructions-bench-token';
const main = API_MAIN;
const WEBHOOK = scenario === 'webhook';

const dir = mkdtempSync(join(tmpdir(), 'plant-store-instructions-'));
const port = 20_000 + Math.floor(Math.random() * 20_000);
const out = join(dir, 'callgrind.out');
const receiverPort = port + 1;
const receiver =
  WEBHOOK &&
  spawn(process.execPath, [resolve(import.meta.dirname, 'receiver.mjs')], {
    stdio: 'ignore',
    env: { PATH: process.env.PATH, PORT: String(receiverPort) },
  });
const server = spawn(
  'valgrind',
  [
    '--tool=callgrind',
    '--instr-atstart=no',
    // V8 writes and rewrites its machine code: callgrind must see every change.
    '--smc-check=all',
    `--callgrind-out-file=${out}`,
    process.execPath,
    // V8 compiles and collects on the main thread, and collects on a schedule of its own work,
    // not of time: otherwise how much of that falls inside the measured requests depends on how
    // busy the machine is.
    '--single-threaded',
    '--predictable-gc-schedule',
    // The heap sizing `pnpm start` runs the api with.
    ...API_NODE_FLAGS,
    // With a dump kept: V8 names its machine code in /tmp/perf-<pid>.map, kept beside the dump,
    // for bench/annotate.mjs to name the JavaScript that callgrind sees only as addresses.
    ...(process.env.BENCH_INSTRUCTIONS_DUMP ? ['--perf-basic-prof'] : []),
    main,
  ],
  {
    cwd: dir,
    stdio: ['ignore', openSync(join(dir, 'api.log'), 'a'), 'pipe'],
    env: {
      PATH: process.env.PATH,
      USER: 'bench',
      NODE_ENV: 'production',
      PORT: String(port),
      HOST: '127.0.0.1',
      DATABASE_URL: `file:${join(dir, 'plants.db')}`,
      API_TOKENS: TOKEN,
      LOG_LEVEL: 'info',
      RATE_LIMIT_MAX: '1000000000',
      // Work done per unit of time, not per request (polls, reloads), would count more the slower
      // the machine runs the server: as rare as the configuration allows.
      WEBHOOK_POLL_INTERVAL_MS: '600000',
      EVENTS_POLL_MS: '60000',
      TOKEN_REFRESH_MS: '3600000',
      // BENCH_API_ENV: more of the api's environment, as NAME=value pairs (e.g. LOG_LEVEL=warn).
      ...Object.fromEntries(
        (process.env.BENCH_API_ENV ?? '')
          .split(/\s+/)
          .filter(Boolean)
          .map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]),
      ),
      ...(WEBHOOK && {
        WEBHOOK_URLS: `http://127.0.0.1:${receiverPort}/hook`,
        WEBHOOK_SECRET: `whsec_${Buffer.alloc(32, 7).toString('base64')}`,
        // Deliveries are claimed by polls: one a second costs little beside the creates.
        WEBHOOK_POLL_INTERVAL_MS: '1000',
      }),
    },
  },
);
let stderr = '';
server.stderr.on('data', (chunk) => {
  stderr += chunk;
});

const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
let counter = 0;

function send({ method, path, body }, to = port) {
  return new Promise((resolve, reject) => {
    const headers = { authorization: `Bearer ${TOKEN}` };
    if (body !== undefined) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = Buffer.byteLength(body);
    }
    const request = http.request(
      { host: '127.0.0.1', port: to, method, path, headers, agent },
      (response) => {
        let text = '';
        response.on('data', (chunk) => {
          text += chunk;
        });
        response.on('end', () =>
          response.statusCode === 200 ? resolve(text) : reject(new Error(`${response.statusCode} ${text}`)),
        );
      },
    );
    request.on('error', (error) => {
      // The server closed a kept-alive connection as this request went out on it (a slow server
      // under valgrind outlives its keep-alive timeout): sent again on a new one.
      if (request.reusedSocket && error.code === 'ECONNRESET') resolve(send({ method, path, body }, to));
      else reject(error);
    });
    request.end(body);
  });
}

/** Scenarios on the plants created first, rather than on new ones. */
const ON_EXISTING = scenario === 'get' || scenario === 'patch' || scenario === 'list';

/** The next request of the scenario, with fresh ids (or one of the plants created first). */
function next() {
  if (ON_EXISTING) return buildRequest(scenario, [String((counter++ % 1000) + 1)]);
  const ids = Array.from({ length: createsPerRequest(scenario, BATCH) }, () => String(++counter + 1000));
  return buildRequest(scenario, ids);
}

async function run(count, request = next) {
  let left = count;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (left-- > 0) await send(request());
    }),
  );
}

/** Waits until the receiver has `count` deliveries, then for their outcomes' write. */
async function delivered(count) {
  if (!WEBHOOK) return;
  for (let i = 0; i < 1200; i++) {
    const { received } = JSON.parse(await send({ method: 'GET', path: '/count' }, receiverPort));
    if (received >= count) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('the deliveries did not arrive');
}

/** Waits until the server answers HTTP at all: the Koa floor (BENCH_API_MAIN=bench/koa-floor.mjs) answers /healthz 404. */
async function ready() {
  for (let i = 0; i < 600; i++) {
    try {
      await send({ method: 'GET', path: '/healthz' });
      return;
    } catch (error) {
      if (/^\d{3} /.test(error.message)) return;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
  throw new Error(`the api did not answer: ${stderr.slice(-2000)}`);
}

function callgrindControl(...args) {
  // vgdb finds the process by a file named after USER and HOST: the same as the server's.
  const env = { PATH: process.env.PATH, USER: 'bench', HOST: '127.0.0.1' };
  const result = spawnSync('callgrind_control', [...args, String(server.pid)], { encoding: 'utf8', env });
  if (result.status !== 0 || !result.stdout.includes('OK')) {
    throw new Error(`callgrind_control ${args.join(' ')}: ${result.stdout}${result.stderr}`);
  }
}

/** The dump's text, once written (callgrind writes it when the process next runs). */
async function dumped() {
  for (let i = 0; i < 100; i++) {
    const dump = readdirSync(dir).find((name) => name.startsWith('callgrind.out.'));
    if (dump !== undefined) {
      const text = readFileSync(join(dir, dump), 'utf8');
      if (/^totals: /m.test(text)) return text;
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error('callgrind wrote no dump');
}

try {
  await ready();
  if (ON_EXISTING) {
    let id = 0;
    await run(1000, () => ({ method: 'POST', path: '/plants', body: restBody(++id) }));
  }
  await run(warmup);
  await delivered(warmup);
  callgrindControl('-i', 'on');
  await run(requests);
  await delivered(warmup + requests);
  callgrindControl('-d');
  const text = await dumped();
  // For callgrind_annotate (where the instructions went, the collector's share among them).
  if (process.env.BENCH_INSTRUCTIONS_DUMP) {
    writeFileSync(process.env.BENCH_INSTRUCTIONS_DUMP, text);
    const map = join(tmpdir(), `perf-${server.pid}.map`);
    copyFileSync(map, `${process.env.BENCH_INSTRUCTIONS_DUMP}.map`);
    rmSync(map);
  }
  const total = Number(/^(?:summary|totals): (\d+)/m.exec(text)?.[1]);
  console.log(
    JSON.stringify({
      scenario,
      main,
      requests,
      warmup,
      instructionsPerRequest: Math.round(total / requests),
    }),
  );
} finally {
  agent.destroy();
  if (receiver) receiver.kill('SIGKILL');
  server.kill('SIGKILL');
  await new Promise((resolve) => server.once('close', resolve));
  // vgdb's pipes of a killed process stay behind.
  for (const name of readdirSync(tmpdir())) {
    if (name.startsWith('vgdb-') && name.includes(`-${server.pid}-by-bench-`)) rmSync(join(tmpdir(), name));
  }
  rmSync(dir, { recursive: true, force: true });
}
