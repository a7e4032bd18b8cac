// One measured run: start a server, check one request, warm up, measure, stop, inspect (peak RSS,
// CPU, the rows in the store, the server's log). Every scenario measures through this.

import { mb, round1, round3 } from './format.mjs';
import { scanLog } from './server-log.mjs';
import { TOKEN } from './session.mjs';
import { processStats, runLoad, sampleMemory, send, spawnServer } from './system.mjs';
import {
  buildRequest,
  createsPerRequest,
  idText,
  isRead,
  LIST_LIMIT,
  LIST_TAG,
  PLANT_NAME,
  PLANT_TAG,
} from './workload.mjs';

/** A server under test with this invocation's token and log setting (BENCH_API_LOG). */
export function startServer(settings, kind, options) {
  if (kind === 'api' && settings.profileDir)
    options = {
      ...options,
      flags: [...(options.flags ?? []), '--cpu-prof', `--cpu-prof-dir=${settings.profileDir}`],
    };
  return spawnServer(kind, { ...options, token: TOKEN, logToFile: settings.apiLog === 'file' });
}

/**
 * One run of `load` against a fresh `kind` server ('api' or 'baseline') on `dir` (or
 * `databaseUrl`): ids from `idStart` on, `warmup` then `duration` seconds, RSS every
 * `sampleEveryMs`; `countRows` counts what the store holds afterwards. `env` is added to the
 * server's environment; `idModulo` makes read ids cycle; `afterLoad(run)` is called once the load
 * has stopped, before the server is, and its fields are added to the run.
 */
export async function measureRun(
  settings,
  {
    kind,
    load,
    dir,
    databaseUrl,
    idMode,
    idStart,
    duration,
    warmup,
    sampleEveryMs = 250,
    countRows,
    keepSamples = false,
    env,
    idModulo,
    afterLoad,
  },
) {
  const server = await startServer(settings, kind, { dir, databaseUrl, env });
  try {
    await server.ready();
    const perRequest = createsPerRequest(load, settings.batch);
    const preflightIds = Array.from({ length: perRequest }, (_, i) => idText(idMode, idStart + i));
    await preflight(server.url, load, preflightIds);
    const memory = sampleMemory(server.pid, sampleEveryMs);
    let cpuStart;
    let measureStart;
    const result = await runLoad(
      {
        url: server.url,
        token: TOKEN,
        scenario: load,
        connections: settings.connections,
        duration,
        warmup,
        idMode,
        idStart: idStart + perRequest,
        idModulo,
        batch: settings.batch,
      },
      {
        onMeasuring() {
          cpuStart = processStats(server.pid)?.cpuSeconds;
          measureStart = performance.now();
        },
      },
    );
    const cpuEnd = processStats(server.pid)?.cpuSeconds;
    const wall = (performance.now() - measureStart) / 1000;
    const { samples, peakKb } = memory.stop();
    const extra = afterLoad ? await afterLoad(result) : {};
    const exit = await server.stop();
    const log = server.logFile ? await scanLog(server.logFile) : undefined;
    const acked = isRead(load) ? undefined : perRequest + (result.warmup?.creates ?? 0) + result.creates;
    const stored = countRows ? await countRows() : undefined;
    return {
      ...result,
      peakRssMb: mb(peakKb),
      endRssMb: samples.length ? mb(samples[samples.length - 1].rssKb) : null,
      rssSamples: keepSamples ? samples.map((s) => ({ t: s.t, mb: mb(s.rssKb) })) : undefined,
      serverCpu: Number.isFinite(cpuEnd - cpuStart) ? round3((cpuEnd - cpuStart) / wall) : null,
      // What carries over between machines of different speeds, beside req/s: CPU time a request.
      serverCpuUsPerRequest:
        Number.isFinite(cpuEnd - cpuStart) && result.reqPerSec > 0
          ? round1(((cpuEnd - cpuStart) * 1e6) / (result.reqPerSec * wall))
          : null,
      serverExit: exit,
      serverLog: log,
      acked,
      stored,
      ...extra,
    };
  } finally {
    await server.stop();
  }
}

/** Sends one request of the scenario and checks that it is a success of the expected shape. */
async function preflight(url, load, ids) {
  const request = buildRequest(load, ids);
  const answer = await send(url, {
    ...request,
    headers: {
      ...(isRead(load)
        ? { authorization: `Bearer ${TOKEN}` }
        : { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }),
      ...request.headers,
    },
  });
  const fail = (why) => {
    throw new Error(
      `check request ${load} ${request.path}: ${why}; HTTP ${answer.status}: ${answer.text.slice(0, 400)}`,
    );
  };
  if (load === 'get-304') {
    if (answer.status !== 304 || answer.text !== '') fail('expected 304 without a body');
    return;
  }
  if (answer.status !== 200) fail('expected 200');
  let body;
  try {
    body = JSON.parse(answer.text);
  } catch {
    fail('answer is not JSON');
  }
  // The tagged store's plants have tags t0…t9, the others `bench`; a patched plant a new name.
  const isPlant = (plant) =>
    (plant?.name === PLANT_NAME || (load === 'patch' && plant?.name?.startsWith(`${PLANT_NAME} `))) &&
    (plant?.tag === PLANT_TAG || (typeof plant?.tag === 'string' && /^t[0-9]$/.test(plant.tag)));
  if (load === 'get') {
    if (!isPlant(body) || typeof body.id !== 'number') fail('expected a Plant with its id');
  } else if (load === 'list' || load === 'list-tag') {
    if (!Array.isArray(body) || body.length !== LIST_LIMIT || !body.every(isPlant))
      fail(`expected an array of ${LIST_LIMIT} plants`);
    if (load === 'list-tag' && !body.every((plant) => plant.tag === LIST_TAG)) fail(`expected tag ${LIST_TAG} only`);
  } else if (load === 'patch') {
    if (!isPlant(body) || typeof body.id !== 'number') fail('expected the patched plant with its id');
  } else if (load === 'trpc') {
    if (!isPlant(body?.result?.data?.json)) fail('expected {result:{data:{json:Plant}}}');
  } else if (load === 'trpc-batch') {
    if (!Array.isArray(body) || body.length !== ids.length)
      fail(`expected an array of ${ids.length} results`);
    const bad = body.filter((item) => !isPlant(item?.result?.data?.json));
    if (bad.length > 0) fail(`${bad.length} of ${ids.length} batch results are not a created Plant`);
  } else if (!isPlant(body)) {
    fail('expected the created Plant');
  }
}
