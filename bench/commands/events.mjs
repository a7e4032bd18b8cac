// `events`: BENCH_EVENT_STREAMS (1,000) open event streams on the api, BENCH_EVENT_TRPC% (50) of them
// tRPC subscriptions and the rest SSE, the stream limits raised so that one bench token may hold them
// all. bench/streams.mjs, a worker on the load core, holds and reads them and sends the paced creates.
//
// SQLite, one instance, in this order: create throughput with no stream; with the streams open
// asking for `plant.deleted` only, so that they receive none of the creates' events (judged: "open
// streams and no events"); with no stream again (the judged ratio is against the mean of the two, so
// that a fresh server's drift weighs on both sides); the RSS the streams add, open and idle;
// BENCH_EVENT_RATE creates/s for BENCH_EVENT_SECONDS, open loop: commit-to-delivery latency on every
// 10th stream; create throughput with every stream receiving every event (reported, not judged).
// PostgreSQL: two instances on one database, the streams on B, the paced creates sent to A.
import { loadServer, startServer } from '../lib/measure.mjs';
import { progress, TOKEN, warn } from '../lib/session.mjs';
import { fmtInt, fmtMs, fmtRatio, ratio, round1, round2, table, target } from '../lib/stats.mjs';
import { freshPostgres } from '../lib/stores.mjs';
import {
  makeTempDir,
  processStats,
  removeTempDir,
  sampleMemory,
  sleep,
  startWorker,
} from '../lib/system.mjs';

const LIMITS = { addedRssMb: 60, p99Sqlite: 50, p99Postgres: 250, throughput: 0.9 };

/** The streams worker (bench/streams.mjs): `ask(message)` resolves with its answer. */
function streamsWorker() {
  const worker = startWorker('streams.mjs', [TOKEN]);
  const ask = async (message, timeoutMs = 120_000) => {
    worker.send(message);
    const answer = await worker.next(timeoutMs);
    if (answer.event === 'error') throw new Error(`streams worker: ${answer.message}`);
    return answer;
  };
  return { ask, stop: worker.stop };
}

/** The api's stream limits, raised for one token holding every stream of the bench. */
const streamLimits = (settings) => {
  const room = String(Math.max(2_000, settings.eventStreams));
  return { EVENT_STREAMS_PER_TOKEN: room, EVENT_STREAMS_MAX: room };
};

/** Create throughput as compare measures it, ids from `idStart`. */
async function throughput(settings, server, idStart) {
  const r = await loadServer(settings, server, 'rest', { idStart });
  return {
    createsPerSec: round1(r.donePerSec),
    p99: r.latency.p99,
    cpuUs: r.serverCpuUs,
    notOk: r.notOk + r.errors,
  };
}

async function openStreams(settings, worker, server, types) {
  const { eventStreams: streams, eventTrpc: trpc } = settings;
  const opened = await worker.ask({ cmd: 'open', url: server.url, streams, trpc, types });
  if (opened.streams !== streams) throw new Error(`opened ${opened.streams} of ${streams} streams`);
}

const pace = ({ eventRate: rate, eventSeconds: seconds }, worker, server, idStart) =>
  worker.ask({ cmd: 'pace', url: server.url, rate, seconds, idStart }, (seconds + 60) * 1000);

const rssMb = (server) => round1(processStats(server.pid).rssMb);
const describe = (p) =>
  `${p.sent} creates at ${p.rate}/s, ${p.eventsReceived} of ${p.eventsExpected} events, ${p.streamsCut} cut, ` +
  `from createdAt p50 ${p.fromCommit?.p50} p99 ${p.fromCommit?.p99} ms, from send p99 ${p.fromSend?.p99} ms` +
  (p.serverCore === undefined ? '' : `, server ${p.serverCore} of a core`);

async function sqlite(settings, worker) {
  const dir = makeTempDir('events', settings.tmpBase);
  const server = await startServer(settings, 'api', { dir, env: streamLimits(settings) });
  try {
    await server.ready();
    const without = [await throughput(settings, server, 1e9)];
    await openStreams(settings, worker, server, 'plant.deleted');
    await sleep(1000);
    const filtered = await throughput(settings, server, 2e9);
    const counts = await worker.ask({ cmd: 'counts' });
    await worker.ask({ cmd: 'drop' });
    await sleep(1000);
    without.push(await throughput(settings, server, 3e9));
    const noStreams = round1((without[0].createsPerSec + without[1].createsPerSec) / 2);
    progress(
      `[events] SQLite: ${filtered.createsPerSec} creates/s with plant.deleted-only streams, ${noStreams} without`,
    );
    const rssBeforeMb = rssMb(server);
    await openStreams(settings, worker, server);
    await sleep(2000);
    const rssIdleMb = rssMb(server);
    const memory = sampleMemory(server.pid, 250);
    const [cpuBefore, started] = [processStats(server.pid).cpuSeconds, performance.now()];
    const paced = await pace(settings, worker, server, 4e9);
    // The share of a core the server spent fanning the events out (1: saturated).
    paced.serverCore = round2(
      (processStats(server.pid).cpuSeconds - cpuBefore) / ((performance.now() - started) / 1000),
    );
    progress(`[events] SQLite: ${describe(paced)}`);
    const every = await throughput(settings, server, 5e9);
    const after = await worker
      .ask({ cmd: 'counts' }, 30_000)
      .catch((error) => ({ cut: `unknown (${error.message})` }));
    await worker.ask({ cmd: 'drop' }, 30_000).catch(() => {});
    if (after.cut !== 0)
      warn(`events: ${after.cut} streams were cut while every stream received every event`);
    return {
      rssBeforeMb,
      rssIdleMb,
      addedRssMb: round1(rssIdleMb - rssBeforeMb),
      paced: { ...paced, peakRssMb: round1(memory.stop().peakMb) },
      without,
      filtered: {
        ...filtered,
        ratio: round2(ratio(filtered.createsPerSec, noStreams)),
        events: counts.events,
        cut: counts.cut,
        open: counts.open,
      },
      every: { ...every, ratio: round2(ratio(every.createsPerSec, noStreams)), cut: after.cut },
    };
  } finally {
    await server.stop();
    removeTempDir(dir);
  }
}

async function postgres(settings, worker) {
  const pg = await freshPostgres(settings.databaseUrl, 'events');
  const dirs = [makeTempDir('events-pg-a', settings.tmpBase), makeTempDir('events-pg-b', settings.tmpBase)];
  const servers = [];
  try {
    // A migrates the fresh database, then B starts on it.
    for (const dir of dirs) {
      servers.push(
        await startServer(settings, 'api', { dir, databaseUrl: pg.databaseUrl, env: streamLimits(settings) }),
      );
      await servers.at(-1).ready();
    }
    const [a, b] = servers;
    const rssBeforeMb = rssMb(b);
    await openStreams(settings, worker, b);
    await sleep(2000);
    const rssIdleMb = rssMb(b);
    const paced = await pace(settings, worker, a, 1);
    progress(`[events] PostgreSQL: ${describe(paced)}`);
    await worker.ask({ cmd: 'drop' });
    return { rssBeforeMb, rssIdleMb, addedRssMb: round1(rssIdleMb - rssBeforeMb), paced };
  } finally {
    for (const server of servers.reverse()) await server.stop();
    await pg.close?.();
    for (const dir of dirs) removeTempDir(dir);
  }
}

async function run(settings) {
  const { eventStreams: streams, eventRate: rate, eventSeconds: seconds, eventTrpc: trpc } = settings;
  const result = { streams, rate, seconds, trpc };
  for (const [part, measure] of [
    ['sqlite', sqlite],
    ['postgres', settings.databaseUrl && postgres],
  ]) {
    if (!measure) continue;
    const worker = streamsWorker();
    try {
      result[part] = await measure(settings, worker);
    } catch (error) {
      progress(`[events] ${part} FAILED: ${error.message}`);
      warn(`events (${part}): ${error.message}`);
      result[part] = { error: error.message };
    } finally {
      worker.stop();
    }
  }
  return result;
}

function render(e) {
  const n = fmtInt(e.streams);
  const latency = (label, x) =>
    x?.paced
      ? [
          [
            label,
            `${x.rssBeforeMb} → ${x.rssIdleMb} (+${x.addedRssMb})`,
            x.paced.rate,
            `${fmtMs(x.paced.fromCommit?.p50)} / ${fmtMs(x.paced.fromCommit?.p99)}`,
            `${fmtMs(x.paced.fromSend?.p50)} / ${fmtMs(x.paced.fromSend?.p99)}`,
            `${fmtInt(x.paced.eventsReceived)} / ${fmtInt(x.paced.eventsExpected)}`,
            x.paced.streamsCut,
          ],
        ]
      : x?.error
        ? [[label, `failed: ${x.error}`]]
        : [];
  const s = e.sqlite;
  const out = [
    `## Event streams: ${n} open, ${e.trpc ?? 0}% tRPC subscriptions and the rest SSE, ${fmtInt(e.rate)} creates/s for ${e.seconds} s`,
    '',
    "Latency is timed on every 10th stream: delivery − the event's `createdAt` (stamped before the commit, so an upper bound on commit-to-delivery), and delivery − the create's send.",
    '',
    table(
      [
        'setup',
        'RSS MiB: before → streams idle',
        'creates/s sent',
        'from createdAt p50 / p99 ms',
        'from send p50 / p99 ms',
        'events delivered / expected',
        'streams cut',
      ],
      [
        ...latency('SQLite, one instance', s),
        ...latency('PostgreSQL, creates to A, streams on B', e.postgres),
      ],
    ),
  ];
  const row = (label, t, r) => [label, fmtInt(t.createsPerSec), fmtMs(t.p99), t.cpuUs, fmtRatio(r)];
  if (s?.filtered)
    out.push(
      table(
        ['streams open (SQLite)', 'creates/s', 'p99 ms', 'server CPU µs/create', '÷ none'],
        [
          row('none, before', s.without[0]),
          row('none, after', s.without[1]),
          row(`${n}, plant.deleted only (no event)`, s.filtered, s.filtered.ratio),
          row(`${n}, every event`, s.every, s.every.ratio),
        ],
      ),
    );
  return out;
}

function targets(e) {
  const out = [];
  const p99 = (what, x, limit) =>
    x &&
    target(
      `${what}: commit-to-delivery p99 ≤ ${limit} ms`,
      x.error ? 'failed' : `${fmtMs(x.paced.fromCommit?.p99)} ms`,
      !x.error && x.paced.fromCommit?.p99 <= limit,
    );
  const s = e.sqlite;
  if (s && !s.error) {
    out.push(
      target(
        `${fmtInt(e.streams)} idle streams add ≤ ${LIMITS.addedRssMb} MiB`,
        `${s.addedRssMb} MiB`,
        s.addedRssMb <= LIMITS.addedRssMb,
      ),
    );
    const f = s.filtered;
    const clean = f.events === 0 && f.cut === 0 && f.open === e.streams;
    out.push(
      target(
        `Creates with ${fmtInt(e.streams)} open streams and no events ≥ ${LIMITS.throughput}× none`,
        `${fmtRatio(f.ratio)}${clean ? '' : `, not valid: ${f.events} events, ${f.cut} cut`}`,
        clean && f.ratio >= LIMITS.throughput,
      ),
    );
  }
  out.push(
    p99(`${fmtInt(e.rate)} creates/s, SQLite`, s, LIMITS.p99Sqlite),
    p99(`${fmtInt(e.rate)} creates/s, PostgreSQL across two instances`, e.postgres, LIMITS.p99Postgres),
  );
  const measured = [s, e.postgres].filter((x) => x?.paced);
  const missing = measured.reduce(
    (m, x) => m + x.paced.eventsExpected - x.paced.eventsReceived + x.paced.streamsCut + x.paced.notOk,
    0,
  );
  if (measured.length)
    out.push(
      target(
        'Every paced create answered and delivered to every stream, none cut (check)',
        `${missing} missing`,
        missing === 0,
      ),
    );
  return out.filter(Boolean);
}

export default { name: 'events', run, render, targets };
