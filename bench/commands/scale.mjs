// `scale`: the api on SQLite stores of BENCH_SCALE_SIZES plants (default 10k,1M,10M), each filled once
// into the api's own migrated schema. Per size: start to /readyz 200, each request's rate (closed
// loops, BENCH_SCALE_SECONDS each), server peak RSS, and GET by id's p99 idle against alongside pages
// of a rare prefix, a rare tag and a common prefix with a tag, each RARE_PER_SEC a second (issue 42's
// "no request's cost grows with rows it does not return").
import { Agent, request } from 'node:http';
import { progress, TOKEN } from '../lib/session.mjs';
import {
  atLeast,
  fmtCount,
  fmtInt,
  fmtMs,
  fmtRatio,
  percentiles,
  ratio,
  round1,
  round2,
  table,
  target,
} from '../lib/stats.mjs';
import { copyStore, freshPostgres, makeStore } from '../lib/stores.mjs';
import { webhookFanout, webhookRetention } from '../lib/webhook-fanout.mjs';
import {
  makeTempDir,
  processStats,
  removeTempDir,
  sampleMemory,
  sleep,
  spawnServer,
} from '../lib/system.mjs';

const AUTH = { authorization: `Bearer ${TOKEN}` };
/** Plant `i` (id i + 1): `Plant <id>`, tagged `t<id mod 100>`, but ten spread ones tagged `rare`. */
const plantOf = (rows) => (i) => [
  i + 1,
  `Plant ${i + 1}`,
  (i + 1) % Math.floor(rows / 10) === 7 ? 'rare' : `t${(i + 1) % 100}`,
];
const pick = (rows) => 1 + Math.floor(Math.random() * rows);
let created = 0;

/**
 * What each kind of request sends, for a store of `rows` plants: the reads first, on the store as filled
 * (PATCHes retag plants: at 10k, most of a tag's plants were gone by the time its page was read), and
 * a tag of 100 plants at every size (`t8`: no plant of it is `rare`).
 */
const KINDS = {
  get: (rows) => ({ path: `/plants/${pick(rows)}` }),
  'first page': () => ({ path: '/plants' }),
  'tag page': () => ({ path: '/plants?tag=t8' }),
  'prefix page': () => ({ path: '/plants?name_prefix=Plant%205' }),
  patch: (rows) => ({
    method: 'PATCH',
    path: `/plants/${pick(rows)}`,
    headers: { 'content-type': 'application/merge-patch+json' },
    body: `{"tag":"p${created++ % 2}"}`,
  }),
  create: () => ({
    method: 'POST',
    path: '/plants',
    headers: { 'content-type': 'application/json' },
    body: `{"id":${-1 - Math.floor(Math.random() * 2 ** 52)},"name":"New","tag":"bench"}`,
  }),
};
/** Each kind of page sent alongside GETs, a second: many readers' worth, short of saturating the core. */
const RARE_PER_SEC = 20;
/** The pages sent alongside GETs: a prefix few names start with, a rare tag, a common prefix with a tag. */
const RARE = {
  'rare prefix': (rows) => ({ path: `/plants?name_prefix=Plant%20${rows - 3}` }),
  'no prefix': () => ({ path: '/plants?name_prefix=zzz' }),
  'rare tag': () => ({ path: '/plants?tag=rare' }),
  'prefix + tag': () => ({ path: '/plants?name_prefix=Plant%201&tag=t3' }),
};

function send(agent, url, { method = 'GET', path, headers = {}, body }) {
  return new Promise((resolve, reject) => {
    const req = request(new URL(path, url), { method, agent, headers: { ...AUTH, ...headers } }, (res) => {
      res.on('data', () => {});
      res.on('end', () => resolve(res.statusCode));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * `connections` closed loops sending `next()` for `seconds`: rate, latency percentiles, bad answers,
 * and the server's CPU µs a request (`pid`'s; steadier than rates on a busy machine).
 */
async function loops(url, connections, seconds, next, pid) {
  const cpuBefore = pid && processStats(pid).cpuSeconds;
  const agent = new Agent({ keepAlive: true, maxSockets: connections });
  const times = [];
  let bad = 0;
  const end = performance.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (performance.now() < end) {
        const started = performance.now();
        const status = await send(agent, url, next()).catch(() => 0);
        times.push(performance.now() - started);
        if (status < 200 || status > 299) bad++;
      }
    }),
  );
  agent.destroy();
  const cpuUs = pid && Math.round(((processStats(pid).cpuSeconds - cpuBefore) * 1e6) / times.length);
  return {
    perSec: Math.round(times.length / seconds),
    ...percentiles(times.sort((a, b) => a - b)),
    bad,
    cpuUs,
  };
}

/** `perSec` requests a second of `next()` for `seconds`, each sent on time whatever the others do. */
async function paced(url, perSec, seconds, next) {
  const agent = new Agent({ keepAlive: true });
  const sent = [];
  for (let i = 0; i < perSec * seconds; i++) {
    const started = performance.now();
    sent.push(
      send(agent, url, next()).then(
        (status) => ({ status, ms: performance.now() - started }),
        () => ({ status: 0, ms: 0 }),
      ),
    );
    await sleep(Math.max(0, started + 1000 / perSec - performance.now()));
  }
  const answers = await Promise.all(sent);
  agent.destroy();
  const bad = answers.filter((a) => a.status < 200 || a.status > 299).length;
  return { perSec, ...percentiles(answers.map((a) => a.ms).sort((a, b) => a - b)), bad };
}

async function measureSize(settings, template, rows) {
  const dir = makeTempDir(`scale-${fmtCount(rows)}`, settings.tmpBase);
  try {
    copyStore(template, dir);
    const started = performance.now();
    const server = await spawnServer('api', { dir, token: TOKEN });
    const memory = sampleMemory(server.pid, 200);
    try {
      for (;;) {
        const status = await send(undefined, server.url, { path: '/readyz' }).catch(() => 0);
        if (status === 200) break;
        if (performance.now() - started > 120_000) throw new Error('not ready within 120 s');
        await sleep(5);
      }
      const readyMs = Math.round(performance.now() - started);
      const seconds = settings.scaleSeconds;
      const get = () => KINDS.get(rows);
      await loops(server.url, 16, 1, get);
      const kinds = {};
      for (const [kind, make] of Object.entries(KINDS))
        kinds[kind] = await loops(server.url, 16, seconds, () => make(rows), server.pid);
      // Each rare page alone: what it costs the server.
      const alone = {};
      for (const [kind, make] of Object.entries(RARE))
        alone[kind] = await loops(server.url, 1, seconds, () => make(rows), server.pid);
      // Idle and alongside in turn, three rounds each: the medians.
      const rounds = { idle: [], alongside: [] };
      const rare = {};
      for (let round = 0; round < 3; round++) {
        rounds.idle.push(await loops(server.url, 4, seconds, get));
        const [alongside] = await Promise.all([
          loops(server.url, 4, seconds, get),
          ...Object.entries(RARE).map(async ([kind, make]) => {
            (rare[kind] ??= []).push(await paced(server.url, RARE_PER_SEC, seconds, () => make(rows)));
          }),
        ]);
        rounds.alongside.push(alongside);
      }
      const middle = (list) => [...list].sort((a, b) => a.p99 - b.p99)[1];
      const [idle, alongside] = [middle(rounds.idle), middle(rounds.alongside)];
      for (const kind of Object.keys(RARE)) rare[kind] = middle(rare[kind]);
      const result = {
        rows,
        readyMs,
        kinds,
        alone,
        idle,
        alongside,
        rare,
        peakRssMb: round1(memory.stop().peakMb),
      };
      progress(`[scale] ${fmtCount(rows)}: ${JSON.stringify(result)}`);
      return result;
    } finally {
      memory.stop();
      await server.stop();
    }
  } finally {
    removeTempDir(dir);
  }
}

async function run(settings) {
  const results = [];
  for (const rows of settings.scaleSizes) {
    const template = await makeStore(settings, `scale-${fmtCount(rows)}`, rows, plantOf(rows));
    try {
      results.push(await measureSize(settings, template, rows));
    } finally {
      removeTempDir(template.dir);
    }
  }
  const first = results[0];
  for (const r of results) {
    r.vsFirst = Object.fromEntries(
      Object.keys(KINDS).map((kind) => [kind, round2(ratio(r.kinds[kind].perSec, first.kinds[kind].perSec))]),
    );
    r.getP99Alongside = round2(ratio(r.alongside.p99, r.idle.p99));
  }
  const {
    scaleWebhooks: n,
    scaleWebhookSeconds: s,
    scaleWebhookBurst: b,
    scaleRetentionSeconds: r,
  } = settings;
  if (n === 0) return { results, webhooks: [], retention: [] };
  /** `scenario` on SQLite, then on PostgreSQL with two instances when a server answers. */
  const onEach = async (scenario) => {
    const each = [await scenario({})];
    if (!settings.databaseUrl || settings.databaseUrl === 'none') return each;
    const pg = await freshPostgres(settings.databaseUrl, 'fanout');
    try {
      each.push(await scenario({ databaseUrl: pg.databaseUrl, instances: 2 }));
    } finally {
      await pg.close?.();
    }
    return each;
  };
  const webhooks = await onEach((options) => webhookFanout(settings, n, s, b, options));
  const retention = r === 0 ? [] : await onEach((options) => webhookRetention(settings, n, r, options));
  return { results, webhooks, retention };
}

/** Every sixth simulated hour's counts, and the last. */
const renderRetention = (w) => [
  `### ${fmtInt(w.endpoints)} endpoints (${fmtInt(w.endpoints - w.healthy)} dead), ${w.hours} simulated hours at a minute a day, ${w.store}`,
  '',
  `The schedule, divided by 1,440 (lib/webhook-fanout.mjs), spans ${fmtInt(w.spanMs)} ms as the api logged it (0: none expired).`,
  '',
  table(
    ['simulated hour', 'pending, dead endpoints', 'pending, healthy', 'delivered', 'failed'],
    [
      ...w.samples
        .filter((_, i) => i % 6 === 0 || i === w.samples.length - 1)
        .map((x) => [x.hours, x.pendingDead, x.pendingHealthy, x.delivered, x.failed]),
      ['**bound** (docs/webhooks.md)', w.bounds.pendingDead, '', w.bounds.delivered, w.bounds.failed],
    ].map((row) => row.map(String)),
  ),
  '',
];

const renderWebhooks = (w) => [
  `### ${fmtInt(w.endpoints)} webhook endpoints (${fmtInt(w.healthy)} healthy, 1 in 10 refusing, 1 in 10 past the timeout), 50 tokens, ${w.store}`,
  '',
  table(
    ['measure', 'figure'],
    [
      [
        `healthy commit-to-receipt p50 / p99 / max (ms), 5 creates/s for ${w.seconds} s`,
        `${w.steady.p50} / ${w.steady.p99} / ${w.steady.max}`,
      ],
      ['healthy deliveries arrived / expected', `${fmtInt(w.steady.arrived)} / ${fmtInt(w.steady.expected)}`],
      ['server cores busy at 5 creates/s', String(w.steadyCores)],
      ['attempt p50 / p99 (ms): connect, send, answer', `${w.attemptMs.p50} / ${w.attemptMs.p99}`],
      [
        `backlog of ${w.burst.creates} creates drained (deliveries/s)`,
        `${fmtInt(w.burst.perSec)} (${fmtInt(w.burst.arrived)} of ${fmtInt(w.burst.expected)})`,
      ],
      ['deliveries received twice', fmtInt(w.duplicates)],
    ],
  ),
  '',
];

const render = ({ results, webhooks, retention = [] }, settings) => [
  `## Scale: the api on SQLite stores of ${results.map((r) => fmtCount(r.rows)).join(', ')} plants (${settings.scaleSeconds} s a measure)`,
  '',
  table(
    ['request', ...results.map((r) => `${fmtCount(r.rows)}: /s (×) · server CPU µs`)],
    [
      ...Object.keys(KINDS).map((kind) => [
        kind,
        ...results.map(
          (r) =>
            `${fmtInt(r.kinds[kind].perSec)} (${fmtRatio(r.vsFirst[kind])}) · ${fmtInt(r.kinds[kind].cpuUs)}`,
        ),
      ]),
      ...Object.keys(RARE).map((kind) => [
        `${kind} page, alone`,
        ...results.map((r) => `${fmtInt(r.alone[kind].perSec)} · ${fmtInt(r.alone[kind].cpuUs)}`),
      ]),
    ],
  ),
  '',
  table(
    ['measure', ...results.map((r) => fmtCount(r.rows))],
    [
      ['ready after start (ms)', ...results.map((r) => fmtInt(r.readyMs))],
      ['server peak RSS (MiB)', ...results.map((r) => r.peakRssMb)],
      ['GET p99 idle (ms)', ...results.map((r) => fmtMs(r.idle.p99))],
      [
        'GET p99 alongside rare pages (ms)',
        ...results.map((r) => `${fmtMs(r.alongside.p99)} (${fmtRatio(r.getP99Alongside)})`),
      ],
      ...Object.keys(RARE).map((kind) => [
        `${kind} page p50 / p99 / max (ms)`,
        ...results.map(
          (r) => `${fmtMs(r.rare[kind].p50)} / ${fmtMs(r.rare[kind].p99)} / ${fmtMs(r.rare[kind].max)}`,
        ),
      ]),
    ],
  ),
  '',
  ...webhooks.flatMap(renderWebhooks),
  ...retention.flatMap(renderRetention),
];

function targets({ results, webhooks, retention = [] }) {
  const last = results.at(-1);
  const size = fmtCount(last.rows);
  const bad = results.reduce(
    (n, r) =>
      n +
      [r.idle, r.alongside, ...Object.values(r.kinds), ...Object.values(r.rare)].reduce(
        (m, l) => m + l.bad,
        0,
      ),
    0,
  );
  return [
    ...Object.keys(KINDS).map((kind) =>
      atLeast(`${kind} at ${size}, × at ${fmtCount(results[0].rows)}`, last.vsFirst[kind], 0.8),
    ),
    target(`Ready after start at ${size} ≤ 2,000 ms`, fmtInt(last.readyMs), last.readyMs <= 2000),
    target(`Server peak RSS at ${size} ≤ 200 MiB`, String(last.peakRssMb), last.peakRssMb <= 200),
    target(
      `GET p99 alongside rare pages at ${size} ≤ 2× idle`,
      fmtRatio(last.getP99Alongside),
      last.getP99Alongside <= 2,
    ),
    target('Every scale request answered 2xx (check)', String(bad), bad === 0),
    ...webhooks.flatMap((w) => [
      target(
        `Healthy webhook p99 at ${fmtInt(w.endpoints)} endpoints (${w.store}) ≤ 2,000 ms, nothing lost or sent twice`,
        `${w.steady.p99} ms, ${fmtInt(w.steady.expected - w.steady.arrived)} lost, ${fmtInt(w.duplicates)} twice`,
        w.steady.p99 <= 2000 && w.steady.arrived === w.steady.expected && w.duplicates === 0,
      ),
      // The goal is SQLite's; PostgreSQL's is reported.
      ...(w.store === 'SQLite'
        ? [
            target(
              'Webhook backlog drain ≥ 5,000 deliveries/s',
              fmtInt(w.burst.perSec),
              w.burst.perSec >= 5000,
            ),
          ]
        : []),
    ]),
    ...retention.map((w) => {
      const keys = Object.keys(w.peak);
      const shown = keys.map((key) => `${key} ${fmtInt(w.peak[key])} (≤ ${fmtInt(w.bounds[key])})`);
      const held = keys.every((key) => w.peak[key] <= w.bounds[key]);
      return target(
        `Deliveries after ${w.hours} simulated hours (${w.store}) within bounds`,
        shown.join(', '),
        held,
      );
    }),
  ];
}

export default { name: 'scale', run, render, targets };
