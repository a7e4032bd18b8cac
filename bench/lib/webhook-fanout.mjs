// The scale command's webhook scenario (issue 42): `endpoints` self-service endpoints over 50 tokens
// on one api (a fresh SQLite store), 8 in 10 healthy (one node:http receiver here, a path each), 1
// in 10 refusing connections (a port nothing listens on), 1 in 10 never answering (a TCP server
// here that accepts and stays silent, so each attempt runs to WEBHOOK_TIMEOUT_MS). Then 5 creates a
// second for `seconds`: commit-to-receipt of the healthy deliveries; then a burst of creates as fast
// as they answer: how fast the healthy deliveries' backlog drains. With `databaseUrl`, `instances` apis
// share that PostgreSQL database, creates alternating between them: a delivery received twice counts.
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { createServer, request } from 'node:http';
import { createServer as createTcpServer } from 'node:net';
import { progress } from './session.mjs';
import { round1 } from './stats.mjs';
import { freePort, HOST, makeTempDir, processStats, removeTempDir, sleep, spawnServer } from './system.mjs';

export const TOKENS = Array.from(
  { length: 50 },
  (_, i) => `bench-fanout-${i}-${randomBytes(12).toString('hex')}`,
);
export const PER_SEC = 5;

export function post(url, path, token, body) {
  return new Promise((resolve, reject) => {
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const req = request(new URL(path, url), { method: 'POST', headers }, (res) => {
      let text = '';
      res.on('data', (chunk) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode, text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const quantile = (sorted, q) =>
  round1(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN);

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
function attemptTimes(logFile) {
  const ms = [];
  for (const line of readFileSync(logFile, 'utf8').split('\n'))
    if (line.includes('"webhook delivered"')) ms.push(JSON.parse(line).ms);
  return ms.sort((a, b) => a - b);
}

/**
 * The endpoints' setup: `endpoints` registered over 50 tokens on `instances` apis (a fresh SQLite store
 * in `dir`, or `databaseUrl`), 8 in 10 to a healthy receiver that calls `onPlant(id, at, path)`, 1 in
 * 10 to a port nothing listens on, 1 in 10 to a black hole. `env` is added to the apis'.
 */
export async function startEndpoints(settings, endpoints, { databaseUrl, instances = 1, env = {}, onPlant }) {
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
      const url = `http://${HOST}:${kind}/${i}`;
      const answer = await post(
        servers[0].url,
        '/webhook-endpoints',
        TOKENS[i % TOKENS.length],
        JSON.stringify({ url }),
      );
      if (answer.status !== 201) throw new Error(`endpoint not registered: ${answer.status} ${answer.text}`);
    }
  } catch (error) {
    await close();
    throw error;
  }
  return { servers, healthy, dir, close };
}

export async function webhookFanout(
  settings,
  endpoints,
  seconds,
  burst,
  { databaseUrl, instances = 1 } = {},
) {
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
  const {
    servers,
    healthy: healthyCount,
    close,
  } = await startEndpoints(settings, endpoints, {
    databaseUrl,
    instances,
    onPlant,
  });
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
        p50: quantile(steady, 0.5),
        p99: quantile(steady, 0.99),
        max: quantile(steady, 1),
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
