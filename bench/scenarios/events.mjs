// `events`: the live event streams (`GET /plants/events`, issue 14), on the api as `pnpm start`
// runs it, with the per-token stream limit raised (EVENT_STREAMS_PER_TOKEN, default 100) so one
// bench token may hold BENCH_EVENT_STREAMS (1,000) streams. The streams are held and read by
// bench/streams.mjs, a worker on the load core; see that file for how latency is taken.
//
// SQLite, one instance, in this order:
//   1. create throughput with no stream open (autocannon, BENCH_CONNECTIONS, like `compare`);
//   2. create throughput, twice, with 1,000 streams open that ask for `plant.deleted` only
//      (`?types=plant.deleted`), so they receive none of the creates' events: issue 14's "1,000
//      open streams and no events"; then those streams are closed, and throughput with no stream
//      is measured again. None, filtered, filtered, none: the drift of a fresh server (warm-up,
//      the file growing) weighs on both sides alike; the judged ratio is of the two pairs' means;
//   3. server RSS, then 1,000 streams of every event opened and left idle 2 s, RSS again: the
//      added RSS;
//   4. BENCH_EVENT_RATE (1,000) creates/s, open loop, for BENCH_EVENT_SECONDS with the streams
//      open: commit-to-delivery latency on every BENCH_EVENT_SAMPLE-th stream;
//   5. create throughput again with the streams open, each receiving every create's event: the
//      stricter case (the fan-out is in the figure), reported, not judged against the target.
// PostgreSQL (when there is one): two instances on one fresh database, the streams on B, the paced
//   creates sent to A: the latency across instances.

import { mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { summariseProfile } from '../lib/cpu-profile.mjs';
import { round1, round2 } from '../lib/format.mjs';
import { startServer } from '../lib/measure.mjs';
import { freshPostgres } from '../lib/postgres.mjs';
import { progress, TOKEN, warn } from '../lib/session.mjs';
import { ratio } from '../lib/stats.mjs';
import {
  makeTempDir,
  processStats,
  removeTempDir,
  runLoad,
  sampleMemory,
  send,
  sleep,
  startStreamsWorker,
} from '../lib/system.mjs';
import { buildRequest } from '../lib/workload.mjs';

/** Id ranges of each phase (seq ids), far apart so no two phases collide. */
const IDS = {
  check: 1,
  without: 1_000_000_000,
  paced: 2_000_000_000,
  with: 3_000_000_000,
  filtered: 4_000_000_000,
  filteredAgain: 5_000_000_000,
  withoutAgain: 6_000_000_000,
};

/** What the streams of the judged throughput run ask for: no create is an event of this type. */
const FILTER = 'plant.deleted';

/** The api's environment: room for the bench's streams on one token and one instance. */
function streamLimits(settings) {
  const room = String(Math.max(2_000, settings.eventStreams));
  return { EVENT_STREAMS_PER_TOKEN: room, EVENT_STREAMS_MAX: room };
}

async function checkCreate(server, id) {
  const answer = await send(server.url, {
    ...buildRequest('rest', [String(id)]),
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
  });
  if (answer.status !== 200)
    throw new Error(`check create: HTTP ${answer.status}: ${answer.text.slice(0, 200)}`);
}

/**
 * Create throughput (autocannon), with the server's CPU time per create over the measured phase:
 * what the server itself spends, which a busy machine (a preempted server, a slow fdatasync) does
 * not change the way it changes creates/s.
 */
async function throughput(settings, server, idStart) {
  let cpuStart;
  const result = await runLoad(
    {
      url: server.url,
      token: TOKEN,
      scenario: 'rest',
      connections: settings.connections,
      duration: settings.duration,
      warmup: settings.warmup,
      idMode: 'seq',
      idStart,
      batch: settings.batch,
    },
    {
      onMeasuring() {
        cpuStart = processStats(server.pid)?.cpuSeconds;
      },
    },
  );
  const cpu = processStats(server.pid)?.cpuSeconds - cpuStart;
  return {
    ...result,
    cpuUsPerCreate: Number.isFinite(cpu) && result.creates > 0 ? (cpu * 1e6) / result.creates : null,
  };
}

/** The mean of two runs' figures (`runs`: each one's creates/s). */
function meanFigures(a, b) {
  const mean = (k) => (a[k] + b[k]) / 2;
  return {
    createsPerSec: round1(mean('createsPerSec')),
    p50: round2(mean('p50')),
    p99: round2(mean('p99')),
    non2xx: a.non2xx + b.non2xx,
    errors: a.errors + b.errors,
    loadCpu: round2(mean('loadCpu')),
    cpuUsPerCreate:
      a.cpuUsPerCreate === null || b.cpuUsPerCreate === null ? null : round1(mean('cpuUsPerCreate')),
    runs: [round1(a.createsPerSec), round1(b.createsPerSec)],
  };
}

const throughputFigures = (run) => ({
  createsPerSec: round1(run.createsPerSec),
  p50: run.latency.p50,
  p99: run.latency.p99,
  non2xx: run.non2xx,
  errors: run.errors + run.timeouts,
  loadCpu: run.loadCpu,
  cpuUsPerCreate: run.cpuUsPerCreate === null ? null : round1(run.cpuUsPerCreate),
});

const rssMb = (pid) => round1((processStats(pid)?.rssKb ?? Number.NaN) / 1024);

async function openStreams(settings, worker, server, types) {
  const opened = await worker.ask({
    cmd: 'open',
    url: server.url,
    token: TOKEN,
    streams: settings.eventStreams,
    sampleEvery: settings.eventSample,
    types,
  });
  if (opened.streams !== settings.eventStreams)
    throw new Error(`opened ${opened.streams} of ${settings.eventStreams} streams`);
  return opened;
}

function pace(settings, worker, server, idStart) {
  return worker.ask(
    {
      cmd: 'pace',
      url: server.url,
      token: TOKEN,
      rate: settings.eventRate,
      seconds: settings.eventSeconds,
      idStart,
    },
    (settings.eventSeconds + 60) * 1000,
  );
}

function describePaced(p) {
  const l = p.latencyFromSend;
  return (
    `${p.sent} creates at ${p.achievedRate}/s (${p.ok} ok, ${p.other} other, ${p.errors} errors), ` +
    `${p.eventsReceived} of ${p.eventsExpected} events delivered, ${p.streamsCut} streams cut, ` +
    `latency from send p50 ${l?.p50} p99 ${l?.p99} max ${l?.max} ms (from commit p99 ${p.latencyFromCommit?.p99} ms), ` +
    `worker CPU ${Math.round(p.workerCpu * 100)}%, ${p.eventsPerRead} events per read, ` +
    `p99 by second sent ${p.p99FromSendBySecond?.join(' · ')} ms (from createdAt ${p.p99FromCommitBySecond?.join(' · ')} ms), ` +
    `send lag max ${p.maxSendLagMs} ms`
  );
}

/**
 * With BENCH_EVENT_PROFILE=1, the profiles the api and the streams worker wrote into `dir`
 * (`--cpu-prof`), summarised: which side of the fan-out is saturated.
 */
function profiles(dir, label) {
  const found = {};
  for (const side of ['server', 'worker']) {
    const where = side === 'server' ? dir : join(dir, 'worker');
    const file = readdirSync(where).find((f) => f.endsWith('.cpuprofile'));
    if (!file) continue;
    const summary = summariseProfile(join(where, file), 12);
    found[side] = summary;
    progress(`[events] ${label}: ${side} profile, busy ${summary.busyPct}% of ${summary.seconds} s:`);
    for (const row of [...summary.packages, ...summary.functions])
      progress(`    ${row.selfPct}% ${row.package} ${row.where ?? ''} ${row.code ?? ''}`);
  }
  return found;
}

/** Ends the worker so that its profile is written (`--cpu-prof` writes on exit, not on SIGKILL). */
async function stopWorker(settings, worker) {
  if (settings.eventProfile && worker) {
    await worker.ask({ cmd: 'close' }, 10_000).catch(() => {});
    await Promise.race([worker.exited, sleep(10_000)]);
  }
  worker?.stop();
}

async function sqlitePart(settings) {
  const dir = makeTempDir('events', settings.tmpBase);
  const profileDir = settings.eventProfile ? makeTempDir('events-profile', settings.tmpBase) : undefined;
  if (profileDir) mkdirSync(join(profileDir, 'worker'));
  const server = await startServer({ ...settings, profileDir }, 'api', { dir, env: streamLimits(settings) });
  let worker;
  let result;
  try {
    await server.ready();
    await checkCreate(server, IDS.check);
    progress(`[events] SQLite: create throughput, no stream open …`);
    const withoutFirst = await throughput(settings, server, IDS.without);
    progress(`[events] SQLite: ${Math.round(withoutFirst.createsPerSec)} creates/s without streams`);
    worker = startStreamsWorker({ profileDir: profileDir && join(profileDir, 'worker') });
    const filtered = await filteredThroughput(settings, worker, server);
    const withoutAgain = await throughput(settings, server, IDS.withoutAgain);
    progress(`[events] SQLite: ${Math.round(withoutAgain.createsPerSec)} creates/s without streams, again`);
    const without = meanFigures(throughputFigures(withoutFirst), throughputFigures(withoutAgain));
    const rssBeforeMb = rssMb(server.pid);
    const opened = await openStreams(settings, worker, server);
    await sleep(2000);
    const rssIdleMb = rssMb(server.pid);
    progress(
      `[events] SQLite: ${opened.streams} streams open in ${opened.ms} ms; RSS ${rssBeforeMb} → ${rssIdleMb} MiB`,
    );
    progress(`[events] SQLite: ${settings.eventRate} creates/s for ${settings.eventSeconds} s …`);
    const memory = sampleMemory(server.pid, 250);
    const paced = await pace(settings, worker, server, IDS.paced);
    const { peakKb } = memory.stop();
    progress(`[events] SQLite: ${describePaced(paced)}`);
    progress(`[events] SQLite: create throughput with the streams open …`);
    const withStreams = await throughput(settings, server, IDS.with);
    // A reader swamped by the fan-out may not answer; the figures above stand without it.
    const counts = await worker.ask({ cmd: 'counts' }, 30_000).catch((error) => {
      warn(`events: ${error.message}`);
      return { open: null, cut: null };
    });
    progress(
      `[events] SQLite: ${Math.round(withStreams.createsPerSec)} creates/s with the streams open; ${counts.open} streams still open, ${counts.cut} cut`,
    );
    if (counts.cut > 0)
      warn(
        `events: ${counts.cut} of ${settings.eventStreams} streams were cut by the server (too far behind: EVENT_STREAM_BUFFER)`,
      );
    result = {
      rssBeforeMb,
      rssIdleMb,
      addedRssMb: round1(rssIdleMb - rssBeforeMb),
      openMs: opened.ms,
      paced: { ...paced, peakRssMb: round1(peakKb / 1024) },
      without,
      withStreams: { ...throughputFigures(withStreams), streamsCut: counts.cut },
      withVsWithout: round2(ratio(withStreams.createsPerSec, without.createsPerSec)),
      filtered: {
        ...filtered.figures,
        filteredVsWithout: round2(ratio(filtered.createsPerSec, without.createsPerSec)),
      },
    };
  } finally {
    await stopWorker(settings, worker);
    await server.stop();
    removeTempDir(dir);
  }
  if (profileDir) {
    result.profiles = profiles(profileDir, 'SQLite');
    removeTempDir(profileDir);
  }
  return result;
}

/**
 * Create throughput, two runs, with the streams open that ask for `FILTER` only, so they receive no
 * event: then the streams are closed (and the server given a second to see it). Every stream must
 * still be open at the end and have received nothing, else the figure is not the one judged.
 */
async function filteredThroughput(settings, worker, server) {
  const opened = await openStreams(settings, worker, server, FILTER);
  await sleep(1000);
  progress(
    `[events] SQLite: ${opened.streams} streams open asking for ${FILTER} only (in ${opened.ms} ms); create throughput …`,
  );
  const first = await throughput(settings, server, IDS.filtered);
  const again = await throughput(settings, server, IDS.filteredAgain);
  const figures = meanFigures(throughputFigures(first), throughputFigures(again));
  const counts = await worker.ask({ cmd: 'counts' }, 30_000);
  progress(
    `[events] SQLite: ${figures.runs.map(Math.round).join(', ')} creates/s with ${counts.open} ${FILTER}-only streams open; ${counts.events} events received, ${counts.cut} cut`,
  );
  if (counts.events > 0 || counts.cut > 0 || counts.open !== settings.eventStreams)
    warn(
      `events: the ${FILTER}-only streams received ${counts.events} events, ${counts.cut} were cut, ${counts.open} open`,
    );
  await worker.ask({ cmd: 'drop' });
  await sleep(1000);
  return {
    createsPerSec: figures.createsPerSec,
    figures: {
      ...figures,
      types: FILTER,
      streamsOpen: counts.open,
      eventsReceived: counts.events,
      streamsCut: counts.cut,
    },
  };
}

async function postgresPart(settings) {
  const pg = await freshPostgres(settings.databaseUrl, 'events');
  const dirA = makeTempDir('events-pg-a', settings.tmpBase);
  const dirB = makeTempDir('events-pg-b', settings.tmpBase);
  let worker;
  let a;
  let b;
  try {
    // A migrates the fresh database first; then B starts on it.
    a = await startServer(settings, 'api', { dir: dirA, databaseUrl: pg.url, env: streamLimits(settings) });
    await a.ready();
    b = await startServer(settings, 'api', { dir: dirB, databaseUrl: pg.url, env: streamLimits(settings) });
    await b.ready();
    await checkCreate(a, IDS.check);
    const rssBeforeMb = rssMb(b.pid);
    worker = startStreamsWorker();
    const opened = await openStreams(settings, worker, b);
    await sleep(2000);
    const rssIdleMb = rssMb(b.pid);
    progress(
      `[events] PostgreSQL: ${opened.streams} streams open on instance B; ${settings.eventRate} creates/s to A for ${settings.eventSeconds} s …`,
    );
    const paced = await pace(settings, worker, a, IDS.paced);
    progress(`[events] PostgreSQL: ${describePaced(paced)}`);
    return { rssBeforeMb, rssIdleMb, addedRssMb: round1(rssIdleMb - rssBeforeMb), paced };
  } finally {
    worker?.stop();
    await b?.stop();
    await a?.stop();
    await pg.drop();
    removeTempDir(dirA);
    removeTempDir(dirB);
  }
}

export async function events(settings) {
  const result = {
    streams: settings.eventStreams,
    rate: settings.eventRate,
    seconds: settings.eventSeconds,
    sampleEvery: settings.eventSample,
    limits: streamLimits(settings),
  };
  try {
    result.sqlite = await sqlitePart(settings);
  } catch (error) {
    progress(`[events] SQLite FAILED: ${error.message}`);
    warn(`events (SQLite): ${error.message}`);
    result.sqlite = { error: error.message };
  }
  if (settings.databaseUrl) {
    try {
      result.postgres = await postgresPart(settings);
    } catch (error) {
      progress(`[events] PostgreSQL FAILED: ${error.message}`);
      warn(`events (PostgreSQL): ${error.message}`);
      result.postgres = { error: error.message };
    }
  }
  return result;
}
