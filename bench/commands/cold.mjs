// `cold`: spawn to the first 200 of POST /plants on a fresh data directory (so with the migration),
// polling as fast as refusals come back; the api and the bare baseline interleaved, BENCH_RUNS each.
import { interleave, startServer } from '../lib/measure.mjs';
import { TOKEN, warn } from '../lib/session.mjs';
import { median, round1, table, target } from '../lib/stats.mjs';
import { makeTempDir, removeTempDir, send } from '../lib/system.mjs';
import { restBody } from '../lib/workload.mjs';

/** Cold start must not exceed this (ms). */
const LIMIT_MS = 300;

async function coldStart(settings, kind) {
  const dir = makeTempDir(`cold-${kind}`, settings.tmpBase);
  const started = performance.now();
  const server = await startServer(settings, kind, { dir });
  const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
  try {
    for (;;) {
      const answer = await send(server.url, {
        method: 'POST',
        path: '/plants',
        headers,
        body: restBody(1),
      }).catch(() => undefined);
      if (answer?.status === 200) return performance.now() - started;
      if (answer)
        throw new Error(`${kind}: the first answer was ${answer.status}: ${answer.text.slice(0, 200)}`);
      if (server.exited() || performance.now() - started > 20_000)
        throw new Error(`${kind} did not start: ${server.stderr()}`);
      await new Promise(setImmediate);
    }
  } finally {
    await server.stop();
    removeTempDir(dir);
  }
}

async function run(settings) {
  const describe = (ms) => `${Math.round(ms)} ms`;
  const times = await interleave(
    settings,
    'cold',
    ['api', 'baseline'],
    (kind) => coldStart(settings, kind),
    describe,
  );
  for (const list of Object.values(times)) for (const t of list) if (t.error) warn(`cold: ${t.error}`);
  const ms = (kind) => times[kind].filter((t) => !t.error).map(round1);
  return {
    api: median(ms('api')),
    baseline: median(ms('baseline')),
    times: { api: ms('api'), baseline: ms('baseline') },
  };
}

const render = (c) => [
  '## Cold start: spawn to the first 200 of a create, fresh data directory',
  '',
  table(
    ['server', 'median ms', 'runs ms'],
    [
      ['api', c.api, c.times.api.join(' · ')],
      ['bare baseline', c.baseline, c.times.baseline.join(' · ')],
    ],
  ),
];

const targets = (c) => [target(`Cold start ≤ ${LIMIT_MS} ms`, `${c.api} ms`, c.api <= LIMIT_MS)];

export default { name: 'cold', run, render, targets };
