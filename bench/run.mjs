// `pnpm bench`: the api side by side with the baseline (bench/baseline.mjs), plus growth, soak and
// cold-start benches. See bench/README.md for what each measures and the environment knobs.
//
//   node bench/run.mjs [compare|growth|soak|cold|all]…   (default: all; build the api first)

import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { copyFileSync, createReadStream, existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, platform, release, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import Database from 'better-sqlite3';
import { renderMarkdown } from './lib/report.mjs';
import { max, median, ratio, rotate, slope, sum } from './lib/stats.mjs';
import {
  API_MAIN,
  fileSystemOf,
  freePort,
  installCleanup,
  keepTemporaryDirectories,
  makeTempDir,
  pinningPlan,
  processStats,
  ROOT,
  removeTempDir,
  runLoad,
  sampleMemory,
  send,
  setPinning,
  spawnServer,
} from './lib/system.mjs';
import {
  buildRequest,
  createsPerRequest,
  idText,
  PLANT_NAME,
  PLANT_TAG,
  scatter,
  trpcInput,
} from './lib/workload.mjs';

const COMMANDS = ['compare', 'growth', 'soak', 'cold'];
const HELP = `usage: node bench/run.mjs [compare|growth|soak|cold|all]...   (default: all)

  compare  baseline vs api: REST, tRPC one call per request, tRPC batched (and PostgreSQL REST
           when BENCH_DATABASE_URL is set), interleaved, BENCH_RUNS runs each
  growth   REST create throughput/latency with BENCH_GROWTH_SIZES plants already stored
  soak     BENCH_SOAK_SECONDS of REST creates, server RSS sampled every second
  cold     spawn to first 200 on POST /plants, median of BENCH_COLD_RUNS

Environment (defaults): BENCH_DURATION=10 BENCH_WARMUP=3 BENCH_RUNS=3 BENCH_CONNECTIONS=50
  BENCH_BATCH=10 BENCH_SCENARIOS=baseline,rest,trpc,trpc-batch[,postgres] BENCH_DATABASE_URL=
  BENCH_GROWTH_SIZES=0,100k,1M BENCH_GROWTH_IDS=scattered BENCH_IDS=seq BENCH_SOAK_SECONDS=60
  BENCH_SOAK_MAX_SLOPE=2 (MB/min) BENCH_COLD_RUNS=5 BENCH_SERVER_CPU=0 BENCH_LOAD_CPU=1 BENCH_PIN=1
  BENCH_TMPDIR=<os tmpdir> BENCH_API_LOG=file|null BENCH_OUT=bench/results/latest BENCH_KEEP=0
  BENCH_STRICT=0 (1: exit 1 when a target fails)`;

class UsageError extends Error {}

// ---------------------------------------------------------------------------------------------
// Settings

function intEnv(name, fallback, min) {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = parseCount(raw.trim());
  if (!Number.isInteger(value) || value < min)
    throw new UsageError(`${name} must be an integer >= ${min}, got ${raw}`);
  return value;
}

/** "100000", "100k", "1M" → number. */
function parseCount(text) {
  const match = /^(\d+(?:\.\d+)?)([kKmM]?)$/.exec(text);
  if (!match) return Number.NaN;
  const factor = { '': 1, k: 1e3, K: 1e3, m: 1e6, M: 1e6 }[match[2]];
  return Math.round(Number(match[1]) * factor);
}

function oneOf(name, fallback, allowed) {
  const value = process.env[name]?.trim() || fallback;
  if (!allowed.includes(value))
    throw new UsageError(`${name} must be one of ${allowed.join(', ')}, got ${value}`);
  return value;
}

function readSettings() {
  const env = process.env;
  const databaseUrl = env.BENCH_DATABASE_URL?.trim() || undefined;
  if (databaseUrl && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new UsageError('BENCH_DATABASE_URL must be a postgres:// or postgresql:// URL');
  }
  const allScenarios = ['baseline', 'rest', 'trpc', 'trpc-batch', ...(databaseUrl ? ['postgres'] : [])];
  let scenarios = allScenarios;
  if (env.BENCH_SCENARIOS?.trim()) {
    scenarios = env.BENCH_SCENARIOS.split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    for (const name of scenarios) {
      if (!allScenarios.includes(name)) {
        throw new UsageError(
          name === 'postgres'
            ? 'the postgres scenario needs BENCH_DATABASE_URL=postgres://…'
            : `unknown scenario ${name} (${allScenarios.join(', ')})`,
        );
      }
    }
    // Every ratio is against the baseline of the same run.
    if (!scenarios.includes('baseline')) scenarios.unshift('baseline');
  }
  const sizes = (env.BENCH_GROWTH_SIZES?.trim() || '0,100k,1M').split(',').map((s) => parseCount(s.trim()));
  if (sizes.some((n) => !Number.isInteger(n) || n < 0))
    throw new UsageError('BENCH_GROWTH_SIZES must list counts like 0,100k,1M');
  const slopeLimit = Number(env.BENCH_SOAK_MAX_SLOPE ?? 2);
  if (!Number.isFinite(slopeLimit)) throw new UsageError('BENCH_SOAK_MAX_SLOPE must be a number (MB/min)');
  return {
    duration: intEnv('BENCH_DURATION', 10, 1),
    warmup: intEnv('BENCH_WARMUP', 3, 0),
    runs: intEnv('BENCH_RUNS', 3, 1),
    connections: intEnv('BENCH_CONNECTIONS', 50, 1),
    batch: intEnv('BENCH_BATCH', 10, 1),
    scenarios,
    databaseUrl,
    growthSizes: [...new Set(sizes)].sort((a, b) => a - b),
    growthIds: oneOf('BENCH_GROWTH_IDS', 'scattered', ['seq', 'scattered']),
    ids: oneOf('BENCH_IDS', 'seq', ['seq', 'scattered']),
    soakSeconds: intEnv('BENCH_SOAK_SECONDS', 60, 3),
    soakMaxSlope: slopeLimit,
    coldRuns: intEnv('BENCH_COLD_RUNS', 5, 1),
    tmpBase: resolve(env.BENCH_TMPDIR?.trim() || (process.env.TMPDIR ?? '/tmp')),
    apiLog: oneOf('BENCH_API_LOG', 'file', ['file', 'null']),
    out: resolve(ROOT, env.BENCH_OUT?.trim() || 'bench/results/latest'),
    keep: env.BENCH_KEEP === '1',
    strict: env.BENCH_STRICT === '1',
  };
}

function readCommands(argv) {
  if (argv.includes('-h') || argv.includes('--help')) {
    console.log(HELP);
    process.exit(0);
  }
  const wanted = argv.length === 0 ? ['all'] : argv;
  for (const command of wanted) {
    if (command !== 'all' && !COMMANDS.includes(command))
      throw new UsageError(`unknown command ${command}\n\n${HELP}`);
  }
  return wanted.includes('all') ? COMMANDS : COMMANDS.filter((c) => wanted.includes(c));
}

// ---------------------------------------------------------------------------------------------
// State of this invocation

const TOKEN = `bench-${randomBytes(12).toString('hex')}`;
const warnings = [];
let settings;

function progress(message) {
  process.stderr.write(`${message}\n`);
}

function warn(message) {
  if (!warnings.includes(message)) warnings.push(message);
}

// ---------------------------------------------------------------------------------------------
// One measured run: start a server, check one request, warm up, measure, stop, inspect.

const SCENARIOS = {
  baseline: {
    kind: 'baseline',
    load: 'rest',
    title: 'baseline: node:http + better-sqlite3 (synchronous=NORMAL)',
  },
  rest: { kind: 'api', load: 'rest', title: 'api REST POST /plants (SQLite)' },
  trpc: { kind: 'api', load: 'trpc', title: 'api tRPC plants.create, 1 call per request' },
  'trpc-batch': { kind: 'api', load: 'trpc-batch', title: 'api tRPC plants.create, batched' },
  postgres: { kind: 'api', load: 'rest', title: 'api REST POST /plants (PostgreSQL)' },
};

async function measureRun({
  kind,
  load,
  dir,
  databaseUrl,
  idMode,
  idStart,
  duration,
  warmup,
  sampleEveryMs = 250,
  countRows,
  keepSamples = false,
}) {
  const server = await spawnServer(kind, {
    dir,
    token: TOKEN,
    databaseUrl,
    logToFile: settings.apiLog === 'file',
  });
  try {
    await server.ready();
    const perRequest = createsPerRequest(load, settings.batch);
    const preflightIds = Array.from({ length: perRequest }, (_, i) => idText(idMode, idStart + i));
    await preflight(server.url, load, preflightIds);
    const memory = sampleMemory(server.pid, sampleEveryMs);
    let cpuStart;
    let measureStart;
    const result = await runLoad(
      {
        url: server.url,
        token: TOKEN,
        scenario: load,
        connections: settings.connections,
        duration,
        warmup,
        idMode,
        idStart: idStart + perRequest,
        batch: settings.batch,
      },
      {
        onMeasuring() {
          cpuStart = processStats(server.pid)?.cpuSeconds;
          measureStart = performance.now();
        },
      },
    );
    const cpuEnd = processStats(server.pid)?.cpuSeconds;
    const wall = (performance.now() - measureStart) / 1000;
    const { samples, peakKb } = memory.stop();
    const exit = await server.stop();
    const log = server.logFile ? await scanLog(server.logFile) : undefined;
    const acked = perRequest + (result.warmup?.creates ?? 0) + result.creates;
    const stored = countRows ? await countRows() : undefined;
    return {
      ...result,
      peakRssMb: mb(peakKb),
      endRssMb: samples.length ? mb(samples[samples.length - 1].rssKb) : null,
      rssSamples: keepSamples ? samples.map((s) => ({ t: s.t, mb: mb(s.rssKb) })) : undefined,
      serverCpu: Number.isFinite(cpuEnd - cpuStart) ? round3((cpuEnd - cpuStart) / wall) : null,
      serverExit: exit,
      serverLog: log,
      acked,
      stored,
    };
  } finally {
    await server.stop();
  }
}

/** Sends one request of the scenario and checks that it is a success of the expected shape. */
async function preflight(url, load, ids) {
  const request = buildRequest(load, ids);
  const answer = await send(url, {
    ...request,
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
  });
  const fail = (why) => {
    throw new Error(
      `check request ${load} ${request.path}: ${why}; HTTP ${answer.status}: ${answer.text.slice(0, 400)}`,
    );
  };
  if (answer.status !== 200) fail('expected 200');
  let body;
  try {
    body = JSON.parse(answer.text);
  } catch {
    fail('answer is not JSON');
  }
  const isPlant = (plant) => plant?.name === PLANT_NAME && plant?.tag === PLANT_TAG;
  if (load === 'trpc') {
    if (!isPlant(body?.result?.data?.json)) fail('expected {result:{data:{json:Plant}}}');
  } else if (load === 'trpc-batch') {
    if (!Array.isArray(body) || body.length !== ids.length)
      fail(`expected an array of ${ids.length} results`);
    const bad = body.filter((item) => !isPlant(item?.result?.data?.json));
    if (bad.length > 0) fail(`${bad.length} of ${ids.length} batch results are not a created Plant`);
  } else if (!isPlant(body)) {
    fail('expected the created Plant');
  }
}

/** Counts the server's log lines by level and its POST answers by status. */
async function scanLog(file) {
  const summary = { lines: 0, levels: {}, postStatuses: {}, firstProblem: undefined, notJson: 0 };
  const bump = (map, key) => {
    map[key] = (map[key] ?? 0) + 1;
  };
  const lines = createInterface({ input: createReadStream(file), crlfDelay: Number.POSITIVE_INFINITY });
  for await (const line of lines) {
    if (line === '') continue;
    summary.lines++;
    if (
      line.startsWith('{"level":30,') &&
      line.includes('"method":"POST"') &&
      line.includes('"status":200,')
    ) {
      bump(summary.levels, 30);
      bump(summary.postStatuses, 200);
      continue;
    }
    let entry;
    try {
      entry = JSON.parse(line);
    } catch {
      summary.notJson++;
      summary.firstProblem ??= line.slice(0, 300);
      continue;
    }
    bump(summary.levels, entry.level);
    if (entry.msg === 'request' && entry.method === 'POST') bump(summary.postStatuses, entry.status);
    if (entry.level >= 40 && summary.firstProblem === undefined) {
      summary.firstProblem = `${entry.msg}${entry.err?.message ? `: ${entry.err.message}` : ''}`.slice(
        0,
        300,
      );
    }
  }
  return summary;
}

function sqliteRowCounter(file, prefilled = 0) {
  return async () => {
    const db = new Database(file, { readonly: true });
    try {
      return Number(db.prepare('SELECT count(*) AS n FROM plants').get().n) - prefilled;
    } finally {
      db.close();
    }
  };
}

// ---------------------------------------------------------------------------------------------
// PostgreSQL: a fresh database per run when the URL's role may create one.

async function freshPostgres(baseUrl, tag) {
  const { default: pg } = await import('pg');
  const name = `plant_store_bench_${process.pid}_${tag}`.replace(/[^a-z0-9_]/g, '_');
  const admin = new pg.Client({ connectionString: baseUrl });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${name}`);
    await admin.query(`CREATE DATABASE ${name}`);
  } catch (error) {
    await admin.end();
    warn(`PostgreSQL: could not create a fresh database (${error.message}); runs share ${redact(baseUrl)}`);
    return {
      url: baseUrl,
      // Ids above anything earlier runs of this kind used.
      idStart: Date.now() * 1000,
      count: undefined,
      drop: async () => {},
    };
  }
  await admin.end();
  const url = new URL(baseUrl);
  url.pathname = `/${name}`;
  const withClient = async (connectionString, query) => {
    const client = new pg.Client({ connectionString });
    await client.connect();
    try {
      return await client.query(query);
    } finally {
      await client.end();
    }
  };
  return {
    url: url.toString(),
    idStart: 0,
    count: async () => {
      try {
        return Number((await withClient(url.toString(), 'SELECT count(*) AS n FROM plants')).rows[0].n);
      } catch {
        return undefined;
      }
    },
    drop: async () => {
      try {
        await withClient(baseUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } catch (error) {
        warn(`PostgreSQL: could not drop ${name}: ${error.message}`);
      }
    },
  };
}

function redact(url) {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return 'the given URL';
  }
}

// ---------------------------------------------------------------------------------------------
// compare: baseline vs api, interleaved

async function compareRun(name, round) {
  const scenario = SCENARIOS[name];
  const dir = makeTempDir(name, settings.tmpBase);
  let pg;
  try {
    let databaseUrl;
    let idStart = 0;
    let countRows = sqliteRowCounter(join(dir, 'plants.db'));
    if (name === 'postgres') {
      pg = await freshPostgres(settings.databaseUrl, `${round}`);
      databaseUrl = pg.url;
      idStart = pg.idStart;
      countRows = pg.count;
    }
    return await measureRun({
      kind: scenario.kind,
      load: scenario.load,
      dir,
      databaseUrl,
      idMode: settings.ids,
      idStart,
      duration: settings.duration,
      warmup: settings.warmup,
      countRows,
    });
  } finally {
    await pg?.drop();
    removeTempDir(dir);
  }
}

async function compare() {
  const names = settings.scenarios;
  const runs = Object.fromEntries(names.map((name) => [name, []]));
  for (let round = 0; round < settings.runs; round++) {
    for (const name of rotate(names, round)) {
      const label = `[compare ${round + 1}/${settings.runs}] ${name}`;
      progress(`${label} …`);
      try {
        const run = await compareRun(name, round);
        runs[name].push(run);
        progress(`${label}: ${describeRun(run)}`);
      } catch (error) {
        runs[name].push({ error: error.message });
        progress(`${label}: FAILED: ${error.message}`);
      }
    }
  }
  const summary = {};
  for (const name of names) {
    summary[name] = { title: titleOf(name), ...summarize(name, runs[name]) };
  }
  const base = summary.baseline;
  for (const name of names) {
    const s = summary[name];
    s.vsBaseline = round2(ratio(s.createsPerSec, base?.createsPerSec));
    s.p99VsBaseline = round2(ratio(s.p99, base?.p99));
  }
  return { summary, runs: stripRuns(runs) };
}

function titleOf(name) {
  return name === 'trpc-batch'
    ? `${SCENARIOS[name].title} (${settings.batch} per request)`
    : SCENARIOS[name].title;
}

function describeRun(run) {
  const parts = [
    `${fmtInt(run.reqPerSec)} req/s`,
    run.createsPerSec !== run.reqPerSec ? `${fmtInt(run.createsPerSec)} creates/s` : undefined,
    `p50 ${fmtMs(run.latency.p50)} p99 ${fmtMs(run.latency.p99)} ms`,
    `non-2xx ${run.non2xx}`,
    `errors ${runErrors(run)}`,
    `peak RSS ${run.peakRssMb} MB`,
    run.serverCpu !== null ? `server CPU ${pct(run.serverCpu)}` : undefined,
    `load CPU ${pct(run.loadCpu)}`,
  ];
  return parts.filter(Boolean).join(', ');
}

function runErrors(run) {
  return run.errors + run.timeouts + run.batchItemErrors + (run.badBatches ?? 0);
}

/** Medians over the successful runs of one scenario, and what looked wrong. */
function summarize(name, runs) {
  const ok = runs.filter((run) => !run.error);
  const failed = runs.filter((run) => run.error).map((run) => run.error);
  for (const message of failed) warn(`${name}: a run failed: ${message}`);
  if (ok.length === 0) return { runs: 0, failed: failed.length, error: failed[0] ?? 'no runs' };
  const loadCpu = median(ok.map((run) => run.loadCpu));
  if (loadCpu !== null && loadCpu > 0.9) {
    warn(
      `${name}: the load generator used ${pct(loadCpu)} of its core: the figure may be bounded by the load generator, not the server`,
    );
  }
  for (const run of ok) {
    if (run.stored !== undefined && run.stored < run.acked) {
      warn(
        `${name}: ${run.acked - run.stored} acknowledged creates are missing from the store after the run`,
      );
    }
    const log = run.serverLog;
    if (log) {
      const problems = Object.entries(log.levels)
        .filter(([level]) => Number(level) >= 40)
        .reduce((n, [, c]) => n + c, 0);
      if (problems > 0)
        warn(`${name}: the server logged ${problems} warning/error lines, first: ${log.firstProblem}`);
      const non200 = Object.entries(log.postStatuses).filter(([status]) => status !== '200');
      if (non200.length > 0)
        warn(
          `${name}: the server's access log shows POST answers other than 200: ${non200.map(([s, c]) => `${s}×${c}`).join(', ')}`,
        );
    }
    const exit = run.serverExit;
    if (SCENARIOS[name]?.kind !== 'baseline' && exit && exit.code !== 0) {
      warn(`${name}: the api did not exit cleanly on SIGTERM (${exit.code ?? exit.signal})`);
    }
    const warm = run.warmup;
    if (warm && warm.non2xx + warm.errors + warm.batchItemErrors > 0) {
      warn(
        `${name}: the warm-up saw ${warm.non2xx} non-2xx, ${warm.errors} errors, ${warm.batchItemErrors} failed batch items`,
      );
    }
  }
  return {
    runs: ok.length,
    failed: failed.length,
    reqPerSec: round1(median(ok.map((run) => run.reqPerSec))),
    createsPerSec: round1(median(ok.map((run) => run.createsPerSec))),
    p50: median(ok.map((run) => run.latency.p50)),
    p99: median(ok.map((run) => run.latency.p99)),
    non2xx: sum(ok.map((run) => run.non2xx)),
    errors: sum(ok.map(runErrors)),
    statusCodes: mergeCounts(ok.map((run) => run.statusCodes)),
    peakRssMb: max(ok.map((run) => run.peakRssMb)),
    serverCpu: median(ok.map((run) => run.serverCpu)),
    loadCpu,
    perRun: ok.map((run) => Math.round(run.createsPerSec)),
    acked: sum(ok.map((run) => run.acked)),
    stored: ok.every((run) => run.stored !== undefined) ? sum(ok.map((run) => run.stored)) : null,
  };
}

function mergeCounts(list) {
  const total = {};
  for (const counts of list)
    for (const [key, n] of Object.entries(counts ?? {})) total[key] = (total[key] ?? 0) + n;
  return total;
}

/** Drops the bulky per-run arrays from what goes into the JSON, keeping per-second throughput. */
function stripRuns(runs) {
  return Object.fromEntries(
    Object.entries(runs).map(([name, list]) => [name, list.map(({ rssSamples, ...run }) => run)]),
  );
}

// ---------------------------------------------------------------------------------------------
// growth: REST creates with N plants already stored

async function prepareGrowthTemplate(size) {
  const dir = makeTempDir(`growth-template-${size}`, settings.tmpBase);
  const file = join(dir, 'plants.db');
  // Let the api create and migrate the file, as it would in production.
  const server = await spawnServer('api', { dir, token: TOKEN, logToFile: false });
  try {
    await server.ready();
  } finally {
    await server.stop();
  }
  if (size > 0) {
    const started = performance.now();
    const db = new Database(file);
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = OFF');
    db.pragma('cache_size = -262144');
    const insert = db.prepare('INSERT INTO plants (id, name, tag) VALUES (?, ?, ?)');
    let ids;
    if (settings.growthIds === 'seq') {
      ids = { length: size, at: (i) => BigInt(i + 1) };
    } else {
      // Sorted, so the fill is fast; the load then inserts scattered ids all over the tree.
      const sorted = new BigInt64Array(size);
      for (let i = 0; i < size; i++) sorted[i] = scatter(i);
      sorted.sort();
      ids = { length: size, at: (i) => sorted[i] };
    }
    db.transaction(() => {
      for (let i = 0; i < ids.length; i++) insert.run(ids.at(i), PLANT_NAME, 'prefill');
    })();
    db.pragma('wal_checkpoint(TRUNCATE)');
    db.close();
    progress(
      `[growth] pre-filled ${fmtInt(size)} plants in ${((performance.now() - started) / 1000).toFixed(1)} s`,
    );
  }
  return { dir, files: readdirSync(dir).filter((f) => f.startsWith('plants.db')) };
}

async function growth() {
  const sizes = settings.growthSizes;
  const templates = {};
  try {
    for (const size of sizes) templates[size] = await prepareGrowthTemplate(size);
    const runs = Object.fromEntries(sizes.map((size) => [size, []]));
    for (let round = 0; round < settings.runs; round++) {
      for (const size of rotate(sizes, round)) {
        const label = `[growth ${round + 1}/${settings.runs}] ${fmtInt(size)} stored`;
        progress(`${label} …`);
        const dir = makeTempDir(`growth-${size}`, settings.tmpBase);
        try {
          for (const file of templates[size].files)
            copyFileSync(join(templates[size].dir, file), join(dir, file));
          const run = await measureRun({
            kind: 'api',
            load: 'rest',
            dir,
            idMode: settings.growthIds,
            idStart: size,
            duration: settings.duration,
            warmup: settings.warmup,
            countRows: sqliteRowCounter(join(dir, 'plants.db'), size),
          });
          runs[size].push(run);
          progress(`${label}: ${describeRun(run)}`);
        } catch (error) {
          runs[size].push({ error: error.message });
          progress(`${label}: FAILED: ${error.message}`);
        } finally {
          removeTempDir(dir);
        }
      }
    }
    const summary = {};
    for (const size of sizes) summary[size] = summarize(`growth ${fmtInt(size)}`, runs[size]);
    const first = summary[sizes[0]];
    for (const size of sizes) {
      summary[size].vsFirst = round2(ratio(summary[size].createsPerSec, first.createsPerSec));
      summary[size].p99VsFirst = round2(ratio(summary[size].p99, first.p99));
    }
    return { sizes, idMode: settings.growthIds, summary, runs: stripRuns(runs) };
  } finally {
    for (const template of Object.values(templates)) removeTempDir(template.dir);
  }
}

// ---------------------------------------------------------------------------------------------
// soak: sustained REST creates, RSS every second

async function soak() {
  const seconds = settings.soakSeconds;
  progress(`[soak] ${seconds} s of REST creates …`);
  const dir = makeTempDir('soak', settings.tmpBase);
  let run;
  try {
    run = await measureRun({
      kind: 'api',
      load: 'rest',
      dir,
      idMode: settings.ids,
      idStart: 0,
      duration: seconds,
      warmup: 0,
      sampleEveryMs: 1000,
      keepSamples: true,
      countRows: sqliteRowCounter(join(dir, 'plants.db')),
    });
  } catch (error) {
    progress(`[soak] FAILED: ${error.message}`);
    warn(`soak: the run failed: ${error.message}`);
    return { seconds, error: error.message };
  } finally {
    removeTempDir(dir);
  }
  progress(`[soak] ${describeRun(run)}`);
  summarize('soak', [run]);
  const samples = run.rssSamples;
  const warmupEnd = seconds / 3;
  const after = samples.filter((s) => s.t >= warmupEnd && s.t <= seconds + 0.5);
  const perMinute = slope(after.map((s) => ({ x: s.t, y: s.mb })));
  const thirds = (list) => {
    const n = Math.floor(list.length / 3);
    return n === 0 ? [null, null] : [list.slice(0, n), list.slice(-n)].map((part) => sum(part) / part.length);
  };
  const [firstThird, lastThird] = thirds(run.perSecond);
  const { rssSamples, ...rest } = run;
  return {
    seconds,
    createsPerSec: round1(run.createsPerSec),
    p50: run.latency.p50,
    p99: run.latency.p99,
    non2xx: run.non2xx,
    errors: runErrors(run),
    rssMinMb: round1(Math.min(...samples.map((s) => s.mb))),
    rssMaxMb: round1(Math.max(...samples.map((s) => s.mb))),
    rssMinAfterWarmupMb: after.length ? round1(Math.min(...after.map((s) => s.mb))) : null,
    rssMaxAfterWarmupMb: after.length ? round1(Math.max(...after.map((s) => s.mb))) : null,
    peakRssMb: run.peakRssMb,
    trendMbPerMin: perMinute === null ? null : round2(perMinute * 60),
    trendWindow: `${round1(warmupEnd)}–${seconds} s`,
    throughputLastVsFirstThird: round2(ratio(lastThird, firstThird)),
    acked: run.acked,
    stored: run.stored,
    rssSamples,
    run: rest,
  };
}

// ---------------------------------------------------------------------------------------------
// cold: spawn to first 200 on POST /plants

async function coldStartOnce(kind) {
  const dir = makeTempDir(`cold-${kind}`, settings.tmpBase);
  try {
    const port = await freePort();
    const started = performance.now();
    const server = await spawnServer(kind, {
      dir,
      token: TOKEN,
      port,
      logToFile: settings.apiLog === 'file',
    });
    try {
      const request = buildRequest('rest', ['1']);
      const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
      const deadline = started + 20_000;
      for (;;) {
        let answer;
        try {
          answer = await send(server.url, { ...request, headers }, 5000);
        } catch (error) {
          if (server.exited()) throw new Error(`${kind} exited before answering: ${server.stderr().trim()}`);
          if (performance.now() > deadline)
            throw new Error(`${kind} did not answer within 20 s (${error.message})`);
          await new Promise((next) => setImmediate(next));
          continue;
        }
        if (answer.status === 200) return performance.now() - started;
        throw new Error(`${kind}: first answer was HTTP ${answer.status}: ${answer.text.slice(0, 300)}`);
      }
    } finally {
      await server.stop();
    }
  } finally {
    removeTempDir(dir);
  }
}

async function cold() {
  const kinds = ['api', 'baseline'];
  const times = { api: [], baseline: [] };
  const failures = [];
  for (let round = 0; round < settings.coldRuns; round++) {
    for (const kind of rotate(kinds, round)) {
      try {
        const ms = await coldStartOnce(kind);
        times[kind].push(round1(ms));
        progress(`[cold ${round + 1}/${settings.coldRuns}] ${kind}: ${ms.toFixed(1)} ms`);
      } catch (error) {
        failures.push(error.message);
        progress(`[cold ${round + 1}/${settings.coldRuns}] ${kind}: FAILED: ${error.message}`);
        warn(`cold start: ${error.message}`);
      }
    }
  }
  return {
    runs: settings.coldRuns,
    api: { medianMs: round1(median(times.api)), runsMs: times.api },
    baseline: { medianMs: round1(median(times.baseline)), runsMs: times.baseline },
    failures,
  };
}

// ---------------------------------------------------------------------------------------------
// Targets (issue 3)

function targets(results) {
  const list = [];
  const add = (target, figure, pass) =>
    list.push({
      target,
      figure,
      result: pass === null || pass === undefined ? 'n/a' : pass ? 'PASS' : 'FAIL',
    });
  const c = results.compare?.summary;
  if (c) {
    const base = c.baseline;
    const rest = c.rest;
    if (rest && base) {
      add(
        'REST create ≥ 0.60× baseline req/s',
        fmtRatio(rest.vsBaseline),
        rest.vsBaseline === null ? null : rest.vsBaseline >= 0.6,
      );
      add(
        'REST p99 ≤ 2× baseline p99',
        rest.p99 === null || rest.p99 === undefined
          ? 'n/a'
          : `${fmtMs(rest.p99)} ms vs ${fmtMs(base.p99)} ms (${fmtRatio(rest.p99VsBaseline)})`,
        rest.p99VsBaseline === null ? null : rest.p99VsBaseline <= 2,
      );
      add(
        'REST zero non-2xx (and no errors)',
        rest.runs ? `${rest.non2xx} non-2xx, ${rest.errors} errors` : 'n/a',
        rest.runs ? rest.non2xx === 0 && rest.errors === 0 : null,
      );
    }
    const batch = c['trpc-batch'];
    if (batch && base) {
      add(
        `tRPC batched (${settings.batch}/request) ≥ 0.60× baseline creates/s`,
        fmtRatio(batch.vsBaseline),
        batch.vsBaseline === null ? null : batch.vsBaseline >= 0.6,
      );
    }
    const one = c.trpc;
    if (one && base) {
      add(
        'tRPC one call per request ≥ 0.30× baseline creates/s',
        fmtRatio(one.vsBaseline),
        one.vsBaseline === null ? null : one.vsBaseline >= 0.3,
      );
    }
    const pg = c.postgres;
    if (pg && base)
      add('PostgreSQL REST create (no target; ratio vs baseline)', fmtRatio(pg.vsBaseline), null);
    const checked = Object.values(c).filter((r) => r.runs > 0 && r.stored !== null && r.stored !== undefined);
    const lost = checked.reduce(
      (n, s) => n + (s.stored === null || s.stored === undefined ? 0 : Math.max(0, s.acked - s.stored)),
      0,
    );
    if (checked.length > 0) {
      add('Every acknowledged create is in the store after the run (check)', `${lost} missing`, lost === 0);
    }
  }
  const s = results.soak;
  if (s) {
    add(
      `Soak peak RSS ≤ 150 MB (${s.seconds} s)`,
      s.error ? 'failed' : `${s.peakRssMb} MB`,
      s.error ? false : s.peakRssMb <= 150,
    );
    add(
      `Soak: no upward RSS trend after warm-up (slope ≤ ${settings.soakMaxSlope} MB/min over ${s.trendWindow ?? 'n/a'})`,
      s.error || s.trendMbPerMin === null ? 'n/a' : `${s.trendMbPerMin} MB/min`,
      s.error ? false : s.trendMbPerMin === null ? null : s.trendMbPerMin <= settings.soakMaxSlope,
    );
  }
  const cs = results.cold;
  if (cs) {
    add(
      'Cold start (spawn to first 200) ≤ 300 ms',
      cs.api.medianMs === null ? 'failed' : `${cs.api.medianMs} ms`,
      cs.api.medianMs === null ? false : cs.api.medianMs <= 300,
    );
  }
  const g = results.growth;
  if (g && g.sizes.length > 1) {
    const first = g.sizes[0];
    const last = g.sizes[g.sizes.length - 1];
    const r = g.summary[last].vsFirst;
    add(
      `Create throughput at ${fmtCount(last)} stored ≥ 0.8× at ${fmtCount(first)}`,
      fmtRatio(r),
      r === null ? null : r >= 0.8,
    );
  }
  return list;
}

// ---------------------------------------------------------------------------------------------
// Machine and run description

function machineInfo() {
  const cpuList = cpus();
  let commit;
  try {
    commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], {
      cwd: ROOT,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  } catch {}
  return {
    date: new Date().toISOString(),
    cpuModel: cpuList[0]?.model?.trim() ?? 'unknown',
    cores: cpuList.length,
    memoryGb: round1(totalmem() / 2 ** 30),
    os: `${platform()} ${release()}`,
    node: process.version,
    commit,
    dataDir: settings.tmpBase,
    dataDirFs: fileSystemOf(settings.tmpBase),
    loadAverageAtStart: loadavg().map(round2),
  };
}

// ---------------------------------------------------------------------------------------------

function mb(kb) {
  return Number.isFinite(kb) ? round1(kb / 1024) : null;
}
function round1(v) {
  return typeof v === 'number' && Number.isFinite(v) ? Math.round(v * 10) / 10 : null;
}
function round3(v) {
  return typeof v === 'number' && Number.isFinite(v) ? Math.round(v * 1000) / 1000 : null;
}
function round2(v) {
  return typeof v === 'number' && Number.isFinite(v) ? Math.round(v * 100) / 100 : null;
}
function fmtInt(v) {
  return typeof v === 'number' ? Math.round(v).toLocaleString('en-US') : 'n/a';
}
function fmtMs(v) {
  return typeof v === 'number' ? v.toFixed(2) : 'n/a';
}
function fmtRatio(v) {
  return typeof v === 'number' ? `${v.toFixed(2)}×` : 'n/a';
}
function fmtCount(n) {
  return n >= 1e6 && n % 1e6 === 0 ? `${n / 1e6}M` : n >= 1e3 && n % 1e3 === 0 ? `${n / 1e3}k` : String(n);
}
function pct(v) {
  return typeof v === 'number' ? `${Math.round(v * 100)}%` : 'n/a';
}

/** The tRPC bodies the load generator hand-builds must be what superjson itself produces. */
async function checkSuperjsonFormat() {
  const { default: superjson } = await import('superjson');
  for (const id of ['1', '9223372036854775807', '-9223372036854775808', String(scatter(7))]) {
    const expected = JSON.stringify(
      superjson.serialize({ id: BigInt(id), name: PLANT_NAME, tag: PLANT_TAG }),
    );
    if (trpcInput(id) !== expected) {
      throw new Error(`the tRPC body format drifted from superjson: ${trpcInput(id)} vs ${expected}`);
    }
  }
}

async function main() {
  let commands;
  try {
    commands = readCommands(process.argv.slice(2));
    settings = readSettings();
  } catch (error) {
    if (error instanceof UsageError) {
      console.error(error.message);
      process.exit(2);
    }
    throw error;
  }
  if (!existsSync(API_MAIN)) {
    console.error(`${API_MAIN} is missing: build the api first (pnpm --filter @plant-store/api build)`);
    process.exit(2);
  }
  installCleanup();
  keepTemporaryDirectories(settings.keep);
  const plan = pinningPlan(process.env);
  setPinning(plan);
  if (!plan.enabled) warn(`not pinned to cores (${plan.why}): server and load generator share the CPUs`);
  if (settings.scenarios.some((name) => name.startsWith('trpc'))) await checkSuperjsonFormat();

  const machine = machineInfo();
  const [load1] = machine.loadAverageAtStart;
  if (load1 > 0.5)
    warn(`load average was ${load1} at start: other work on this machine makes the figures noisy`);
  progress(
    `plant-store bench: ${commands.join(', ')} · ${machine.cpuModel} × ${machine.cores} · Node ${machine.node} · ` +
      (plan.enabled ? `server on CPU ${plan.serverCpu}, load on CPU ${plan.loadCpu}` : 'not pinned'),
  );

  const results = {};
  const started = performance.now();
  if (commands.includes('compare')) results.compare = await compare();
  if (commands.includes('growth')) results.growth = await growth();
  if (commands.includes('soak')) results.soak = await soak();
  if (commands.includes('cold')) results.cold = await cold();
  machine.loadAverageAtEnd = loadavg().map(round2);
  machine.benchSeconds = Math.round((performance.now() - started) / 1000);

  const report = {
    machine,
    settings: {
      commands,
      connections: settings.connections,
      durationSeconds: settings.duration,
      warmupSeconds: settings.warmup,
      runs: settings.runs,
      batch: settings.batch,
      ids: settings.ids,
      growthIds: settings.growthIds,
      growthSizes: settings.growthSizes,
      soakSeconds: settings.soakSeconds,
      coldRuns: settings.coldRuns,
      apiLog: settings.apiLog,
      pinning: plan.enabled ? { serverCpu: plan.serverCpu, loadCpu: plan.loadCpu } : { off: plan.why },
      postgres: settings.databaseUrl ? redact(settings.databaseUrl) : null,
    },
    targets: targets(results),
    warnings,
    ...results,
  };
  const markdown = renderMarkdown(report);
  mkdirSync(dirname(settings.out), { recursive: true });
  writeFileSync(`${settings.out}.json`, `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(`${settings.out}.md`, markdown);
  process.stdout.write(`\n${markdown}`);
  progress(`\nwrote ${settings.out}.json and ${settings.out}.md`);

  const harnessFailed =
    Object.values(results.compare?.summary ?? {}).some((s) => s.failed > 0) ||
    Object.values(results.growth?.summary ?? {}).some((s) => s.failed > 0) ||
    Boolean(results.soak?.error) ||
    (results.cold?.failures.length ?? 0) > 0;
  const targetFailed = report.targets.some((t) => t.result === 'FAIL');
  process.exitCode = harnessFailed || (settings.strict && targetFailed) ? 1 : 0;
}

await main();
