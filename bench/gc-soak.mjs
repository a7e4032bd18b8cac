// The built api under load with forced garbage collection, then SIGTERM: it must exit 0, with no
// native abort. Native addons can crash when V8 finalizes their objects (better-sqlite3 12 on
// Node 24: `Assertion failed: (env) != nullptr`), so every 100 ms a full GC runs while creates,
// pages (each a statement iterator, garbage once answered) and reads go on. CI runs it on Node 24.
//
//   node bench/gc-soak.mjs [seconds]        (after `pnpm build`; default 60 s, loopback, SQLite)
import { tmpdir } from 'node:os';
import autocannon from 'autocannon';
import { makeTempDir, removeTempDir, send, spawnServer } from './lib/system.mjs';

const seconds = Number(process.argv[2] ?? 60);
const token = 'plant-store-gc-soak-token';
const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
const dir = makeTempDir('gc-soak', tmpdir());
const api = await spawnServer('api', {
  dir,
  token,
  flags: ['--expose-gc', '--import', new URL('./lib/force-gc.mjs', import.meta.url).href],
  // One token sends everything: the per-token rate limit would answer 429.
  env: { RATE_LIMIT_MAX: '0' },
});

try {
  await api.ready();
  console.log(
    `gc-soak: Node ${process.version}, api at ${api.url}, ${seconds} s of load with gc() every 100 ms`,
  );
  const seeded = await send(api.url, {
    method: 'POST',
    path: '/plants',
    headers,
    body: '{"id":1,"name":"Seed"}',
  });
  if (seeded.status !== 200) throw new Error(`seeding answered ${seeded.status}`);
  let next = 2;
  const result = await autocannon({
    url: api.url,
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
  const failed = result.errors + result.timeouts + result.non2xx;
  console.log(
    `gc-soak: ${result.requests.total} requests (${Math.round(result.requests.average)}/s), ${result.non2xx} non-2xx, ` +
      `${result.errors} errors, ${result.timeouts} timeouts`,
  );
  if (api.exited()) throw new Error('the api died under load');
  if (result.requests.total === 0 || failed > 0) throw new Error('requests failed under load');
  const exit = await api.stop();
  console.log(`gc-soak: after SIGTERM the api exited with code ${exit.code}, signal ${exit.signal}`);
  if (exit.code !== 0 || /Assertion failed|Aborted|FATAL ERROR/.test(api.stderr()))
    throw new Error('the api did not stop cleanly');
  console.log('gc-soak: PASS');
} catch (error) {
  console.error(`gc-soak: FAIL: ${error.message}\napi stderr:\n${api.stderr()}`);
  process.exitCode = 1;
} finally {
  await api.stop();
  removeTempDir(dir);
}
