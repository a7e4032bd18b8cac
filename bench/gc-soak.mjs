// The built api under load with forced garbage collection, then SIGTERM: it must exit 0, with no
// native abort. Native addons can crash when V8 finalizes their objects (better-sqlite3 12 on
// Node 24: `Assertion failed: (env) != nullptr`), so every 100 ms a full GC runs while creates,
// pages (each a statement iterator, garbage once answered) and reads go on. CI runs it on Node 24.
//
//   node bench/gc-soak.mjs [seconds]        (after `pnpm build`; default 60 s, loopback, SQLite)
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import autocannon from 'autocannon';
import { API_MAIN, API_NODE_FLAGS } from './lib/system.mjs';

const seconds = Number(process.argv[2] ?? 60);
const FORCE_GC = new URL('./lib/force-gc.mjs', import.meta.url).href;
const TOKEN = 'plant-store-gc-soak-token';
const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };

const dataDir = mkdtempSync(join(tmpdir(), 'plant-store-gc-soak-'));
const api = spawn(process.execPath, ['--expose-gc', '--import', FORCE_GC, ...API_NODE_FLAGS, API_MAIN], {
  env: {
    PATH: process.env.PATH ?? '',
    NODE_ENV: 'production',
    HOST: '127.0.0.1',
    PORT: '0',
    DATABASE_URL: `file:${join(dataDir, 'plants.db')}`,
    API_TOKENS: TOKEN,
    // One token sends everything: the per-token rate limit (6,000 a minute) would answer 429.
    RATE_LIMIT_MAX: '0',
  },
  stdio: ['ignore', 'pipe', 'pipe'],
});
let stderr = '';
api.stderr.setEncoding('utf8').on('data', (chunk) => {
  stderr += chunk;
});
const exited = new Promise((resolve) => api.once('exit', (code, signal) => resolve({ code, signal })));

try {
  const url = await listening();
  console.log(`gc-soak: Node ${process.version}, api at ${url}, ${seconds} s of load with gc() every 100 ms`);
  const seeded = await fetch(`${url}/plants`, { method: 'POST', headers, body: '{"id":1,"name":"Seed"}' });
  if (!seeded.ok) throw new Error(`seeding answered ${seeded.status}`);
  let next = 2;
  const result = await autocannon({
    url,
    connections: 8,
    duration: seconds,
    headers,
    requests: [
      {
        method: 'POST',
        path: '/plants',
        setupRequest: (request) => ({ ...request, body: `{"id":${next++},"name":"Monstera","tag":"aroid"}` }),
      },
      { method: 'GET', path: '/plants?limit=100' },
      { method: 'GET', path: '/plants/1' },
    ],
  });
  const answered = result.requests.total;
  const failed = result.errors + result.timeouts + result.non2xx;
  const statuses = Object.entries(result.statusCodeStats).map(([code, { count }]) => `${code}: ${count}`);
  console.log(
    `gc-soak: ${answered} requests (${Math.round(result.requests.average)}/s), ${result.non2xx} non-2xx, ` +
      `${result.errors} errors, ${result.timeouts} timeouts (statuses ${statuses.join(', ')})`,
  );
  if (api.exitCode !== null || api.signalCode !== null) throw new Error('the api died under load');
  if (answered === 0 || failed > 0) throw new Error('requests failed under load');
  api.kill('SIGTERM');
  const exit = await Promise.race([
    exited,
    new Promise((resolve) => setTimeout(resolve, 30_000, { code: 'none after 30 s', signal: null }).unref()),
  ]);
  console.log(`gc-soak: after SIGTERM the api exited with code ${exit.code}, signal ${exit.signal}`);
  if (exit.code !== 0 || exit.signal !== null || /Assertion failed|Aborted|FATAL ERROR/.test(stderr)) {
    throw new Error('the api did not stop cleanly');
  }
  console.log('gc-soak: PASS');
} catch (error) {
  console.error(`gc-soak: FAIL: ${error.message}`);
  if (stderr) console.error(`api stderr:\n${stderr}`);
  process.exitCode = 1;
} finally {
  if (api.exitCode === null && api.signalCode === null) api.kill('SIGKILL');
  await exited;
  rmSync(dataDir, { recursive: true, force: true });
}

/** Resolves with the api's URL once it logs that it listens; rejects if it exits first. */
function listening() {
  return new Promise((resolve, reject) => {
    createInterface({ input: api.stdout }).on('line', (line) => {
      if (line.includes('"msg":"listening"')) resolve(JSON.parse(line).url);
    });
    exited.then(({ code, signal }) =>
      reject(new Error(`the api exited (${code ?? signal}) before listening`)),
    );
  });
}
