// The scale command's webhook scenarios (issue 42): `endpoints` self-service endpoints over 50 tokens
// on one api (a fresh SQLite store), 8 in 10 healthy (one node:http receiver here, a path each), 1
// in 10 refusing connections (a port nothing listens on), 1 in 10 never answering (a TCP server
// here that accepts and stays silent, so each attempt runs to WEBHOOK_TIMEOUT_MS). Then 5 creates a
// second for `seconds`: commit-to-receipt of the healthy deliveries; then a burst of creates as fast
// as they answer: how fast the healthy deliveries' backlog drains. With `databaseUrl`, `instances` apis
// share that PostgreSQL database, creates alternating between them: a delivery received twice counts.
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createServer as createTcpServer } from 'node:net';
import Database from 'better-sqlite3';
import pg from 'pg';
import { progress } from './session.mjs';
import { percentiles, quantile, round1 } from './stats.mjs';
import { freePort, HOST, makeTempDir, processStats, removeTempDir, send, sleep } from './system.mjs';
import { spawnServer } from './system.mjs';

const TOKENS = Array.from({ length: 50 }, (_, i) => `bench-fanout-${i}-${randomBytes(12).toString('hex')}`);
const PER_SEC = 5;

const JSON_TYPE = { 'content-type': 'application/json' };
/** A POST with `token`, on a fresh connection: resolves with status and text. */
const post = (url, path, token, body) =>
  send(
    url,
    { method: 'POST', path, body, headers: { authorization: `Bearer ${token}`, ...JSON_TYPE } },
    12e4,
  );

/** Listens on loopback: answers every POST 204 and notes when each plant's delivery arrived, and where. */
async function healthyReceiver(onPlant) {
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      onPlant(JSON.parse(body).id, performance.now(), req.url);
      res.writeHead(204).end();
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise((resolve) => server.listen(0, HOST, resolve));
  return { port: server.address().port, close: () => (server.closeAllConnections(), server.close()) };
}

async function blackHole() {
  const sockets = new Set();
  const server = createTcpServer((socket) => {
    sockets.add(socket.on('error', () => {}).on('close', () => sockets.delete(socket)));
    socket.resume();
  });
  await new Promise((resolve) => server.listen(0, HOST, resolve));
  const close = () => {
    for (const socket of sockets) socket.destroy();
    server.close();
  };
  return { port: server.address().port, close };
}

/** The api log's attempt times (`ms` of "webhook delivered"): connect, send, and the answer. */
const attemptTimes = (logFile) =>
  readFileSync(logFile, 'utf8')
    .split('\n')
    .filter((line) => line.includes('"webhook delivered"'))
    .map((line) => JSON.parse(line).ms);

/**
 * The endpoints' setup: `endpoints` registered over 50 tokens on `instances` apis (a fresh SQLite store
 * in `dir`, or `databaseUrl`), 8 in 10 to a healthy receiver that calls `onPlant(id, at, path)`, 1 in
 * 10 to a port nothing listens on, 1 in 10 to a black hole. `env` is added to the apis'.
 */
async function startEndpoints(settings, endpoints, { databaseUrl, instances = 1, env = {}, onPlant }) {
  const healthy = endpoints - 2 * Math.floor(endpoints / 10);
  const hook = await healthyReceiver(onPlant);
  const hole = await blackHole();
  const refused = await freePort();
  const dir = makeTempDir('scale-webhooks', settings.tmpBase);
  const servers = [];
  const close = async () => {
    for (const one of servers) await one.stop();
    hook.close();
    hole.close();
    if (!settings.keep) removeTempDir(dir);
  };
  try {
    const apiEnv = {
      WEBHOOK_SECRETS_KEY: randomBytes(32).toString('base64'),
      WEBHOOK_ALLOW_PRIVATE_URLS: '1',
      WEBHOOK_ENDPOINTS_PER_TOKEN: String(Math.ceil(endpoints / TOKENS.length)),
      ...env,
    };
    // One after another: the first migrates the store.
    for (let i = 0; i < instances; i++) {
      mkdirSync(`${dir}/${i}`);
      servers.push(
        await spawnServer('api', { dir: `${dir}/${i}`, databaseUrl, token: TOKENS.join(','), env: apiEnv }),
      );
      await servers[i].ready();
    }
    for (let i = 0; i < endpoints; i++) {
      const kind =
        i % 10 === 8 ? `${refused}/refused` : i % 10 === 9 ? `${hole.port}/slow` : `${hook.port}/ok`;
      const url = JSON.stringify({ url: `http://${HOST}:${kind}/${i}` });
      const answer = await post(servers[0].url, '/webhook-endpoints', TOKENS[i % TOKENS.length], url);
      if (answer.status !== 201) throw new Error(`endpoint not registered: ${answer.status} ${answer.text}`);
    }
  } catch (error) {
    await close();
    throw error;
  }
  return { servers, healthy, dir, close };
}

export async function webhookFanout(settings, endpoints, seconds, burst, options = {}) {
  const sentAt = new Map();
  const arrived = [];
  const seen = new Set();
  let received = 0;
  let duplicates = 0;
  const onPlant = (id, at, path) => {
    const key = `${path} ${id}`;
    if (seen.has(key)) duplicates += 1;
    else seen.add(key);
    received += 1;
    const sent = sentAt.get(id);
    if (sent !== undefined) arrived.push({ phase: sent.phase, ms: at - sent.at, at });
  };
  const { databaseUrl, instances = 1 } = options;
  const setup = await startEndpoints(settings, endpoints, { ...options, onPlant });
  const { servers, healthy: healthyCount, close } = setup;
  try {
    let id = 0;
    const create = async (phase) => {
      id += 1;
      const body = JSON.stringify({ id, name: `Fanout ${id}` });
      sentAt.set(id, { phase, at: performance.now() });
      const answer = await post(servers[id % instances].url, '/plants', TOKENS[0], body);
      if (answer.status !== 200) throw new Error(`create answered ${answer.status}`);
    };
    const waitAll = async (timeoutMs) => {
      const end = performance.now() + timeoutMs;
      while (received < id * healthyCount && performance.now() < end) await sleep(50);
    };
    // Steady: PER_SEC creates a second, each sent on time.
    const cpu = () => servers.reduce((sum, one) => sum + processStats(one.pid).cpuSeconds, 0);
    const cpuBefore = cpu();
    const started = performance.now();
    const sent = [];
    for (let i = 0; i < PER_SEC * seconds; i++) {
      sent.push(create('steady'));
      await sleep(Math.max(0, started + ((i + 1) * 1000) / PER_SEC - performance.now()));
    }
    await Promise.all(sent);
    await waitAll(120_000);
    const steadyCores = round1((cpu() - cpuBefore) / ((performance.now() - started) / 1000));
    const steady = arrived
      .filter((a) => a.phase === 'steady')
      .map((a) => a.ms)
      .sort((a, b) => a - b);
    const steadyExpected = PER_SEC * seconds * healthyCount;
    // Backlog: `burst` creates at once (each fanned out to every endpoint), then until all arrive.
    const burstStart = performance.now();
    const before = received;
    for (let i = 0; i < burst; i += 10) await Promise.all(Array.from({ length: 10 }, () => create('burst')));
    await waitAll(300_000);
    const drained = received - before;
    // Not Math.max(...): a backlog of a million overflows the stack.
    const last = arrived.reduce((at, a) => (a.phase === 'burst' && a.at > at ? a.at : at), 0);
    const attempts = servers.flatMap((one) => attemptTimes(one.logFile)).sort((a, b) => a - b);
    const result = {
      store: databaseUrl ? `PostgreSQL, ${instances} instance${instances > 1 ? 's' : ''}` : 'SQLite',
      endpoints,
      healthy: healthyCount,
      seconds,
      steady: {
        expected: steadyExpected,
        arrived: steady.length,
        ...percentiles(steady),
      },
      steadyCores,
      burst: {
        creates: burst,
        expected: burst * healthyCount,
        arrived: drained,
        perSec: Math.round(drained / ((last - burstStart) / 1000)),
      },
      attemptMs: { p50: quantile(attempts, 0.5), p99: quantile(attempts, 0.99) },
      duplicates,
    };
    progress(`[scale] webhooks: ${JSON.stringify(result)}`);
    return result;
  } finally {
    await close();
  }
}

// The retention scenario: 5 creates a second for `seconds`, schedule and retention divided by 1,440
// (a minute a day); the deliveries by state every simulated hour, against docs/webhooks.md's bounds.
const DAY_MS = 60_000;
const scaled = (ms, floor) => Math.max(floor, Math.round((ms * DAY_MS) / 86_400_000));
/** The api's defaults, compressed, but the timeout and cooldown (see below). */
const SCHEDULE = {
  WEBHOOK_BACKOFF_BASE_MS: scaled(1_000, 1),
  WEBHOOK_BACKOFF_MAX_MS: scaled(3_600_000, 1),
  // At 100 ms (its floor), healthy endpoints' answers took longer with two instances on PostgreSQL.
  WEBHOOK_TIMEOUT_MS: 1_000,
  // At 21 ms, 200 dead endpoints' trials alone would be 9,600 attempts a second: events are not compressed.
  WEBHOOK_BREAKER_COOLDOWN_MS: 1_000,
  WEBHOOK_POLL_INTERVAL_MS: scaled(1_000, 50),
  WEBHOOK_RETENTION_MS: scaled(86_400_000, 0),
  WEBHOOK_FAILED_RETENTION_MS: scaled(604_800_000, 0),
};
/** How far apart the api checks rows against a duration (store/pruning.ts's `pruneEveryMs`). */
const checkEvery = (ms) => Math.min(60_000, Math.max(SCHEDULE.WEBHOOK_POLL_INTERVAL_MS, ms));
const COUNT = `SELECT status, url LIKE '%/ok/%' AS healthy, count(*) AS n FROM webhook_deliveries GROUP BY 1, 2`;

/** Counts the deliveries by state, the pending ones of healthy and of dead endpoints apart. */
async function counter(dir, databaseUrl) {
  const tally = (rows) => {
    const counts = { pendingDead: 0, pendingHealthy: 0, delivered: 0, failed: 0 };
    for (const { status, healthy, n } of rows)
      counts[status === 'pending' ? (Number(healthy) ? 'pendingHealthy' : 'pendingDead') : status] +=
        Number(n);
    return counts;
  };
  if (databaseUrl) {
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    return { count: async () => tally((await client.query(COUNT)).rows), close: () => client.end() };
  }
  const db = new Database(`${dir}/0/plants.db`, { readonly: true });
  return { count: async () => tally(db.prepare(COUNT).all()), close: async () => db.close() };
}

/** The schedule's span, as the api logged it with the deliveries it expired (none: 0). */
const loggedSpan = (servers) =>
  servers
    .flatMap((server) => readFileSync(server.logFile, 'utf8').split('\n'))
    .filter((line) => line.includes('"webhook deliveries expired"'))
    .map((line) => JSON.parse(line).afterMs)[0] ?? 0;

export async function webhookRetention(settings, endpoints, seconds, { databaseUrl, instances = 1 } = {}) {
  const { servers, healthy, dir, close } = await startEndpoints(settings, endpoints, {
    databaseUrl,
    instances,
    env: Object.fromEntries(Object.entries(SCHEDULE).map(([key, ms]) => [key, String(ms)])),
    onPlant: () => {},
  });
  const rows = await counter(dir, databaseUrl);
  try {
    const [samples, sent] = [[], []];
    const started = performance.now();
    const hours = () => round1(((performance.now() - started) * 24) / DAY_MS);
    for (let id = 1; performance.now() - started < seconds * 1000; id++) {
      const body = JSON.stringify({ id, name: `Retention ${id}` });
      sent.push(
        post(servers[id % instances].url, '/plants', TOKENS[0], body).then((answer) => {
          if (answer.status !== 200) throw new Error(`create answered ${answer.status}`);
        }),
      );
      if (performance.now() - started >= (samples.length * DAY_MS) / 24)
        samples.push({ hours: hours(), ...(await rows.count()) });
      await sleep(Math.max(0, started + (id * 1000) / PER_SEC - performance.now()));
    }
    await Promise.all(sent);
    samples.push({ hours: hours(), ...(await rows.count()) });
    const spanMs = loggedSpan(servers);
    const dead = endpoints - healthy;
    // Each subscriber's events (pending: with its trials, one a cooldown) times a duration and its check.
    const trials = 1000 / Math.max(SCHEDULE.WEBHOOK_BREAKER_COOLDOWN_MS, SCHEDULE.WEBHOOK_POLL_INTERVAL_MS);
    const bound = (count, ms, perSec = PER_SEC) => Math.ceil((count * perSec * (ms + checkEvery(ms))) / 1000);
    const store = databaseUrl ? `PostgreSQL, ${instances} instance${instances > 1 ? 's' : ''}` : 'SQLite';
    const bounds = {
      pendingDead: bound(dead, spanMs, PER_SEC + trials),
      delivered: bound(healthy, SCHEDULE.WEBHOOK_RETENTION_MS),
      // The failed retention (7 simulated days) outlasts the run.
      failed: Math.ceil((dead * PER_SEC * (performance.now() - started)) / 1000),
    };
    const peak = Object.fromEntries(
      Object.keys(bounds).map((key) => [key, Math.max(...samples.map((x) => x[key]))]),
    );
    const result = { store, endpoints, healthy, hours: hours(), spanMs, bounds, peak, samples };
    progress(`[scale] retention: ${JSON.stringify({ ...result, samples: samples.length })}`);
    return result;
  } finally {
    await rows.close();
    await close();
  }
}
