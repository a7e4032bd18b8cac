// The command line and the BENCH_* environment of `node bench/run.mjs`, read and checked once.
// See bench/README.md for each knob.

import { resolve } from 'node:path';
import { ROOT } from './system.mjs';

export const COMMANDS = ['compare', 'import', 'backlog', 'events', 'growth', 'soak', 'cold', 'profile'];
const HELP = `usage: node bench/run.mjs [compare|import|backlog|events|growth|soak|cold|profile|all]...   (default: all)

  compare  the api beside its baselines, interleaved, BENCH_RUNS runs each: creates over REST, tRPC
           (one call, batched), REST with one webhook subscriber, GET /plants/{id} and
           GET /plants?limit=100 against bare node:http + SQLite servers, and, with PostgreSQL,
           REST creates against a hand-written node:http + pg server
  import   \`plants import\` of an NDJSON file of BENCH_IMPORT_PLANTS plants into a fresh api, then
           \`plants export\` of them, beside compare's tRPC batched scenario, BENCH_IMPORT_RUNS
           interleaved rounds: import plants/s ÷ batched creates/s, export seconds
  backlog  BENCH_BACKLOG_SECONDS of REST creates with one webhook subscriber: the outbox backlog
  events   the live event streams (GET /plants/events): added RSS with BENCH_EVENT_STREAMS open,
           commit-to-delivery latency at BENCH_EVENT_RATE creates/s (SQLite; PostgreSQL across two
           instances), create throughput with the streams open and receiving no event
           (plant.deleted-only streams, judged) and receiving every event (reported) vs none
  growth   REST create throughput/latency with BENCH_GROWTH_SIZES plants already stored
  soak     BENCH_SOAK_SECONDS of REST creates, server RSS every second, the plateau rule
  cold     spawn to first 200 on POST /plants, median of BENCH_COLD_RUNS
  profile  one run of each api scenario under node --cpu-prof: top self time by function and package

Environment (defaults): BENCH_DURATION=10 BENCH_WARMUP=3 BENCH_RUNS=5 BENCH_CONNECTIONS=50
  BENCH_BATCH=10 BENCH_SCENARIOS=<all> BENCH_DATABASE_URL=<local server if it answers>|none
  BENCH_IMPORT_PLANTS=100000 BENCH_IMPORT_RUNS=3
  BENCH_BACKLOG_SECONDS=60 BENCH_PROFILE_SECONDS=5 BENCH_PROFILE_SCENARIOS=<every api scenario>
  BENCH_EVENT_STREAMS=1000 BENCH_EVENT_RATE=1000 BENCH_EVENT_SECONDS=10 BENCH_EVENT_SAMPLE=10
  BENCH_GROWTH_SIZES=0,100k,1M BENCH_GROWTH_IDS=scattered BENCH_IDS=seq BENCH_SOAK_SECONDS=300
  BENCH_SOAK_MAX_SLOPE=2 (MB/min) BENCH_COLD_RUNS=5 BENCH_SERVER_CPU=0 BENCH_LOAD_CPU=1 BENCH_PIN=1
  BENCH_TMPDIR=<os tmpdir> BENCH_API_LOG=file|null BENCH_API_MAIN=apps/api/dist/main.js
  BENCH_OUT=bench/results/latest BENCH_KEEP=0
  BENCH_STRICT=0 (1: exit 1 when a target fails)`;

export class UsageError extends Error {}

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

export function readSettings() {
  const env = process.env;
  const databaseUrl = env.BENCH_DATABASE_URL?.trim() || undefined;
  if (databaseUrl && databaseUrl !== 'none' && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new UsageError('BENCH_DATABASE_URL must be a postgres:// or postgresql:// URL, or none');
  }
  const scenarios = env.BENCH_SCENARIOS?.trim()
    ? env.BENCH_SCENARIOS.split(',')
        .map((s) => s.trim())
        .filter(Boolean)
    : undefined;
  const sizes = (env.BENCH_GROWTH_SIZES?.trim() || '0,100k,1M').split(',').map((s) => parseCount(s.trim()));
  if (sizes.some((n) => !Number.isInteger(n) || n < 0))
    throw new UsageError('BENCH_GROWTH_SIZES must list counts like 0,100k,1M');
  const slopeLimit = Number(env.BENCH_SOAK_MAX_SLOPE ?? 2);
  if (!Number.isFinite(slopeLimit)) throw new UsageError('BENCH_SOAK_MAX_SLOPE must be a number (MB/min)');
  return {
    duration: intEnv('BENCH_DURATION', 10, 1),
    warmup: intEnv('BENCH_WARMUP', 3, 0),
    runs: intEnv('BENCH_RUNS', 5, 1),
    connections: intEnv('BENCH_CONNECTIONS', 50, 1),
    batch: intEnv('BENCH_BATCH', 10, 1),
    /** The scenarios asked for (all when undefined); `resolveScenarios` checks and completes them. */
    scenarios,
    /** `none`: no PostgreSQL scenarios; unset: the local server when it answers (run.mjs). */
    databaseUrl,
    importPlants: intEnv('BENCH_IMPORT_PLANTS', 100_000, 1),
    importRuns: intEnv('BENCH_IMPORT_RUNS', 3, 1),
    backlogSeconds: intEnv('BENCH_BACKLOG_SECONDS', 60, 5),
    profileSeconds: intEnv('BENCH_PROFILE_SECONDS', 5, 1),
    eventStreams: intEnv('BENCH_EVENT_STREAMS', 1000, 1),
    eventRate: intEnv('BENCH_EVENT_RATE', 1000, 1),
    eventSeconds: intEnv('BENCH_EVENT_SECONDS', 10, 1),
    /** Every n-th stream parses its events and times them; the others only count them. */
    eventSample: intEnv('BENCH_EVENT_SAMPLE', 10, 1),
    /** 1: the api instance serving the streams and the streams worker run under `node --cpu-prof`. */
    eventProfile: env.BENCH_EVENT_PROFILE === '1',
    growthSizes: [...new Set(sizes)].sort((a, b) => a - b),
    growthIds: oneOf('BENCH_GROWTH_IDS', 'scattered', ['seq', 'scattered']),
    ids: oneOf('BENCH_IDS', 'seq', ['seq', 'scattered']),
    soakSeconds: intEnv('BENCH_SOAK_SECONDS', 300, 3),
    soakMaxSlope: slopeLimit,
    coldRuns: intEnv('BENCH_COLD_RUNS', 5, 1),
    tmpBase: resolve(env.BENCH_TMPDIR?.trim() || (process.env.TMPDIR ?? '/tmp')),
    apiLog: oneOf('BENCH_API_LOG', 'file', ['file', 'null']),
    out: resolve(ROOT, env.BENCH_OUT?.trim() || 'bench/results/latest'),
    keep: env.BENCH_KEEP === '1',
    strict: env.BENCH_STRICT === '1',
  };
}

export function readCommands(argv) {
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
