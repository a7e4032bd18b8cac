// The scale command's retention scenario (issue 42): the endpoints of webhook-fanout.mjs (1 in 10
// refusing, 1 in 10 past the timeout) receive 5 creates a second for `seconds`, with every duration
// of the retry schedule and of retention divided by 1,440, so that a minute is a simulated day (but
// the timeout and the breaker's cooldown are 1 s). The deliveries table is counted by state every simulated hour
// and held against the bounds docs/webhooks.md gives: a subscriber's rows are its rate (for pending
// ones, with its trials') times the schedule's span, the retention and the failed retention, each
// plus the check's interval.

import { readFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import pg from 'pg';
import { progress } from './session.mjs';
import { round1 } from './stats.mjs';
import { sleep } from './system.mjs';
import { PER_SEC, post, startEndpoints, TOKENS } from './webhook-fanout.mjs';

/** Real seconds per simulated day. */
const DAY_SECONDS = 60;
const COMPRESSION = 86_400 / DAY_SECONDS;
const scaled = (ms, floor) => Math.max(floor, Math.round(ms / COMPRESSION));
/** The api's defaults (docs/configuration.md), compressed; each not below its lowest allowed value. */
const SCHEDULE = {
  WEBHOOK_BACKOFF_BASE_MS: scaled(1_000, 1),
  WEBHOOK_BACKOFF_MAX_MS: scaled(3_600_000, 1),
  // Not 100 ms (its floor): two instances on PostgreSQL, the receiver and the bench share 2 cores,
  // and healthy endpoints' answers then took longer, opening their breakers.
  WEBHOOK_TIMEOUT_MS: 1_000,
  // Not compressed as far: at 21 ms, 200 dead endpoints' trials alone would be 9,600 attempts a
  // second against 5 creates' 5,000 deliveries, a load no real day has (events are not compressed).
  WEBHOOK_BREAKER_COOLDOWN_MS: 1_000,
  WEBHOOK_POLL_INTERVAL_MS: scaled(1_000, 50),
  WEBHOOK_RETENTION_MS: scaled(86_400_000, 0),
  WEBHOOK_FAILED_RETENTION_MS: scaled(604_800_000, 0),
};
/**
 * The schedule's span as apps/api/src/webhooks/backoff.ts's `scheduleSpanMs` adds it up (15 attempts
 * by default): the run fails when the api logs another.
 */
const SPAN_MS = (() => {
  const {
    WEBHOOK_BACKOFF_BASE_MS: base,
    WEBHOOK_BACKOFF_MAX_MS: max,
    WEBHOOK_TIMEOUT_MS: timeout,
  } = SCHEDULE;
  let waits = 0;
  for (let attempt = 1; attempt < 15; attempt++) waits += Math.min(max, base * 2 ** (attempt - 1));
  return waits + 15 * timeout;
})();
/** How far apart the api checks rows against a duration (store/pruning.ts's `pruneEveryMs`). */
const checkEvery = (ms) => Math.min(60_000, Math.max(SCHEDULE.WEBHOOK_POLL_INTERVAL_MS, ms));

const COUNT = `SELECT status, url LIKE '%/ok/%' AS healthy, count(*) AS n FROM webhook_deliveries GROUP BY 1, 2`;

/** Counts the deliveries by state, the pending ones of healthy and of dead endpoints apart. */
async function counter(dir, databaseUrl) {
  const tally = (rows) => {
    const counts = { pendingDead: 0, pendingHealthy: 0, delivered: 0, failed: 0 };
    for (const { status, healthy, n } of rows) {
      const key = status === 'pending' ? (Number(healthy) ? 'pendingHealthy' : 'pendingDead') : status;
      counts[key] += Number(n);
    }
    return counts;
  };
  if (databaseUrl) {
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    return { count: async () => tally((await client.query(COUNT)).rows), close: () => client.end() };
  }
  const db = new Database(`${dir}/0/plants.db`, { readonly: true });
  const statement = db.prepare(COUNT);
  return { count: async () => tally(statement.all()), close: async () => db.close() };
}

/** The span the api logged with the deliveries it expired ("afterMs"), if any expired. */
function loggedSpan(servers) {
  for (const server of servers)
    for (const line of readFileSync(server.logFile, 'utf8').split('\n'))
      if (line.includes('"webhook deliveries expired"')) return JSON.parse(line).afterMs;
  return undefined;
}

export async function webhookRetention(settings, endpoints, seconds, { databaseUrl, instances = 1 } = {}) {
  let received = 0;
  const { servers, healthy, dir, close } = await startEndpoints(settings, endpoints, {
    databaseUrl,
    instances,
    env: Object.fromEntries(Object.entries(SCHEDULE).map(([key, ms]) => [key, String(ms)])),
    onPlant: () => (received += 1),
  });
  const dead = endpoints - healthy;
  const rows = await counter(dir, databaseUrl);
  try {
    const samples = [];
    const started = performance.now();
    const hour = (DAY_SECONDS * 1000) / 24;
    let id = 0;
    const sent = [];
    let nextSample = 0;
    while (performance.now() - started < seconds * 1000) {
      id += 1;
      const body = JSON.stringify({ id, name: `Retention ${id}` });
      sent.push(
        post(servers[id % instances].url, '/plants', TOKENS[0], body).then((answer) => {
          if (answer.status !== 200) throw new Error(`create answered ${answer.status}`);
        }),
      );
      const now = performance.now() - started;
      if (now >= nextSample) {
        samples.push({ hours: round1(now / hour), ...(await rows.count()) });
        nextSample += hour;
      }
      await sleep(Math.max(0, started + (id * 1000) / PER_SEC - performance.now()));
    }
    await Promise.all(sent);
    samples.push({ hours: round1((performance.now() - started) / hour), ...(await rows.count()) });
    const spanMs = loggedSpan(servers);
    if (spanMs !== undefined && spanMs !== SPAN_MS)
      throw new Error(`the api expired deliveries after ${spanMs} ms, the bench expects ${SPAN_MS}`);
    // The documented bounds: each subscriber's rate times each duration plus the check's interval.
    // A dead subscriber's pending ones: its events and its trials (one a cooldown, a round at most),
    // which push a delivery's due time by a backoff.
    const bound = (subscribers, ms, perSec = PER_SEC) =>
      Math.ceil(subscribers * perSec * ((ms + checkEvery(ms)) / 1000));
    const { WEBHOOK_BREAKER_COOLDOWN_MS: cooldown, WEBHOOK_POLL_INTERVAL_MS: poll } = SCHEDULE;
    const trialsPerSec = 1000 / Math.max(cooldown, poll);
    const elapsedMs = performance.now() - started;
    const failedMs = Math.min(
      elapsedMs,
      SCHEDULE.WEBHOOK_FAILED_RETENTION_MS + checkEvery(SCHEDULE.WEBHOOK_FAILED_RETENTION_MS),
    );
    const result = {
      store: databaseUrl ? `PostgreSQL, ${instances} instance${instances > 1 ? 's' : ''}` : 'SQLite',
      endpoints,
      healthy,
      simulatedHours: round1(elapsedMs / hour),
      schedule: SCHEDULE,
      spanMs: SPAN_MS,
      expiredAfterMs: spanMs,
      bounds: {
        pendingDead: bound(dead, SPAN_MS, PER_SEC + trialsPerSec),
        delivered: bound(healthy, SCHEDULE.WEBHOOK_RETENTION_MS),
        failed: Math.ceil(dead * PER_SEC * (failedMs / 1000)),
      },
      peak: Object.fromEntries(
        ['pendingDead', 'pendingHealthy', 'delivered', 'failed'].map((key) => [
          key,
          Math.max(...samples.map((sample) => sample[key])),
        ]),
      ),
      received,
      samples,
    };
    progress(`[scale] retention: ${JSON.stringify({ ...result, samples: samples.length })}`);
    return result;
  } finally {
    await rows.close();
    await close();
  }
}
