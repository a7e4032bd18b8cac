// The command line and the BENCH_* environment of `node bench/run.mjs`, read and checked once.
// bench/README.md says what each knob does.
import { resolve } from 'node:path';
import { ROOT } from './system.mjs';

export const HELP = `usage: node bench/run.mjs [compare|import|backlog|events|growth|scale|soak|cold|profile|all]...  (default: all)

  compare  the api beside its bare baselines, interleaved: REST and tRPC creates, a webhook subscriber,
           reads by id (and 304), pages, a tag page of 1,000,000 plants, PATCH, PostgreSQL
  import   \`plants import\` and \`plants export\` of BENCH_IMPORT_PLANTS plants beside batched tRPC creates
  backlog  BENCH_BACKLOG_SECONDS of creates with one webhook subscriber: the outbox left behind
  events   BENCH_EVENT_STREAMS open event streams (BENCH_EVENT_TRPC% tRPC): added RSS, latency, creates/s
  growth   REST creates with BENCH_GROWTH_SIZES plants already stored
  scale    reads, writes, filtered pages, start-up and RSS at BENCH_SCALE_SIZES plants (SQLite)
  soak     BENCH_SOAK_SECONDS of creates, RSS every second: the plateau rule
  cold     spawn to the first 200 of a create
  profile  the api scenarios of BENCH_SCENARIOS under node --cpu-prof: self time by package and function

Environment (defaults): BENCH_DURATION=10 BENCH_WARMUP=3 BENCH_RUNS=5 BENCH_CONNECTIONS=50 BENCH_BATCH=10
  BENCH_SCENARIOS=<all> BENCH_DATABASE_URL=<local server if it answers>|none BENCH_IMPORT_PLANTS=100000
  BENCH_BACKLOG_SECONDS=60 BENCH_EVENT_STREAMS=1000 BENCH_EVENT_RATE=1000 BENCH_EVENT_SECONDS=10 BENCH_EVENT_TRPC=50
  BENCH_GROWTH_SIZES=0,100k,1M BENCH_SCALE_SIZES=10k,1M,10M BENCH_SCALE_SECONDS=5 BENCH_SOAK_SECONDS=300 BENCH_API_MAIN=apps/api/dist/main.js
  BENCH_SCALE_WEBHOOKS=1000 BENCH_SCALE_WEBHOOK_SECONDS=60 BENCH_SCALE_WEBHOOK_BURST=100 BENCH_SCALE_RETENTION_SECONDS=120
  BENCH_OUT=bench/results/latest BENCH_TMPDIR=<os tmpdir> BENCH_KEEP=0 BENCH_STRICT=0
  BENCH_SERVER_CPU=0 BENCH_LOAD_CPU=1 BENCH_PIN=1`;

export class UsageError extends Error {}

/** "100000", "100k", "1M" → number. */
function parseCount(text) {
  const match = /^(\d+(?:\.\d+)?)([kKmM]?)$/.exec(text.trim());
  return match
    ? Math.round(Number(match[1]) * { '': 1, k: 1e3, K: 1e3, m: 1e6, M: 1e6 }[match[2]])
    : Number.NaN;
}

function count(name, fallback, min) {
  const raw = process.env[name]?.trim();
  const value = raw ? parseCount(raw) : fallback;
  if (!Number.isInteger(value) || value < min)
    throw new UsageError(`${name} must be an integer >= ${min}, got ${raw}`);
  return value;
}

export function readSettings() {
  const env = process.env;
  const databaseUrl = env.BENCH_DATABASE_URL?.trim() || undefined;
  if (databaseUrl && databaseUrl !== 'none' && !/^postgres(ql)?:\/\//.test(databaseUrl))
    throw new UsageError('BENCH_DATABASE_URL must be a postgres:// or postgresql:// URL, or none');
  const sizes = (env.BENCH_GROWTH_SIZES?.trim() || '0,100k,1M').split(',').map(parseCount);
  if (sizes.some((n) => !Number.isInteger(n) || n < 0))
    throw new UsageError('BENCH_GROWTH_SIZES must list counts like 0,100k,1M');
  return {
    duration: count('BENCH_DURATION', 10, 1),
    warmup: count('BENCH_WARMUP', 3, 0),
    runs: count('BENCH_RUNS', 5, 1),
    connections: count('BENCH_CONNECTIONS', 50, 1),
    batch: count('BENCH_BATCH', 10, 1),
    /** The compare scenarios asked for (all when undefined); run.mjs completes them. */
    scenarios: env.BENCH_SCENARIOS?.split(',')
      .map((s) => s.trim())
      .filter(Boolean),
    /** `none`: no PostgreSQL; unset: the local server when it answers (run.mjs). */
    databaseUrl,
    importPlants: count('BENCH_IMPORT_PLANTS', 100_000, 1),
    backlogSeconds: count('BENCH_BACKLOG_SECONDS', 60, 1),
    eventStreams: count('BENCH_EVENT_STREAMS', 1000, 1),
    eventRate: count('BENCH_EVENT_RATE', 1000, 1),
    eventSeconds: count('BENCH_EVENT_SECONDS', 10, 1),
    /** The share of the streams, in percent, opened as tRPC subscriptions. */
    eventTrpc: Math.min(100, count('BENCH_EVENT_TRPC', 50, 0)),
    growthSizes: [...new Set(sizes)].sort((a, b) => a - b),
    scaleSizes: (env.BENCH_SCALE_SIZES?.trim() || '10k,1M,10M').split(',').map(parseCount),
    scaleSeconds: count('BENCH_SCALE_SECONDS', 5, 1),
    /** The webhook scenario's endpoints (0: none), its seconds of 5 creates/s, and its burst of creates. */
    scaleWebhooks: count('BENCH_SCALE_WEBHOOKS', 1000, 0),
    scaleWebhookSeconds: count('BENCH_SCALE_WEBHOOK_SECONDS', 60, 1),
    scaleWebhookBurst: count('BENCH_SCALE_WEBHOOK_BURST', 100, 1),
    /** The retention scenario's seconds, a minute a simulated day (0: none). */
    scaleRetentionSeconds: count('BENCH_SCALE_RETENTION_SECONDS', 120, 0),
    soakSeconds: count('BENCH_SOAK_SECONDS', 300, 3),
    tmpBase: resolve(env.BENCH_TMPDIR?.trim() || env.TMPDIR || '/tmp'),
    out: resolve(ROOT, env.BENCH_OUT?.trim() || 'bench/results/latest'),
    keep: env.BENCH_KEEP === '1',
    strict: env.BENCH_STRICT === '1',
  };
}

/** The commands asked for, in the order of `names` (all with none or `all`); exits on -h. */
export function readCommands(argv, names) {
  if (argv.includes('-h') || argv.includes('--help')) {
    console.log(HELP);
    process.exit(0);
  }
  const unknown = argv.find((c) => c !== 'all' && !names.includes(c));
  if (unknown) throw new UsageError(`unknown command ${unknown}\n\n${HELP}`);
  return argv.length === 0 || argv.includes('all') ? names : names.filter((c) => argv.includes(c));
}
