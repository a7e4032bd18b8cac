// The load generator: one autocannon run after an unmeasured warm-up, in a process of its own so
// that the harness can pin it to its core. Every request takes fresh ids from one counter shared by
// all connections, so no two creates collide; with `idModulo` (reads) the ids cycle through the store.
//
//   node bench/load.mjs '{"url","token","load","connections","duration","warmup","idMode","idStart","idModulo","batch"}'
//
// Writes JSON lines: {"event":"measuring"} when the measured phase starts, then {"event":"done","result"}.
// Latencies are autocannon's time of every response, kept exactly (its histogram rounds to whole ms).
import autocannon from 'autocannon';
import { buildRequest, createsPerRequest, idText } from './lib/workload.mjs';

const config = JSON.parse(process.argv[2]);
const { url, token, load, connections, idMode, batch } = config;
const perRequest = createsPerRequest(load, batch);
const expected = load === 'get-304' ? 304 : 200;
let counter = config.idStart;

function nextIds() {
  const ids = [];
  for (let i = 0; i < perRequest; i++, counter++)
    ids.push(idText(idMode, config.idModulo ? counter % config.idModulo : counter));
  return ids;
}

function count(text, needle) {
  let n = 0;
  for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + 1)) n++;
  return n;
}

/** One autocannon run of `seconds`; resolves with its figures. */
function run(seconds) {
  const latencies = [];
  const tally = { responses: 0, done: 0, itemErrors: 0 };
  // A tRPC batch answers one entry per call: count the created ones and the failed ones.
  const onResponse =
    load === 'trpc-batch'
      ? (_status, body) => {
          const results = count(body, '{"result":');
          tally.done += results;
          tally.itemErrors += perRequest - results;
        }
      : (status) => {
          if (status === expected) tally.done++;
        };
  return new Promise((resolve, reject) => {
    const cpuBefore = process.cpuUsage();
    const started = performance.now();
    const instance = autocannon(
      {
        url,
        connections,
        duration: seconds,
        timeout: 10,
        requests: [
          {
            setupRequest: (request) => {
              const { headers, ...built } = buildRequest(load, nextIds());
              const type = built.body ? { 'content-type': 'application/json' } : {};
              return {
                ...request,
                ...built,
                headers: { authorization: `Bearer ${token}`, ...type, ...headers },
              };
            },
            onResponse,
          },
        ],
      },
      (error, result) => {
        if (error) return reject(error);
        const elapsed = (performance.now() - started) / 1000;
        const cpu = process.cpuUsage(cpuBefore);
        const statusCodes = Object.fromEntries(
          Object.entries(result.statusCodeStats).map(([code, { count }]) => [code, count]),
        );
        latencies.sort((a, b) => a - b);
        const at = (q) =>
          latencies[Math.min(latencies.length - 1, Math.ceil(q * latencies.length) - 1)] ?? null;
        resolve({
          seconds: elapsed,
          responses: tally.responses,
          reqPerSec: tally.responses / elapsed,
          done: tally.done,
          donePerSec: tally.done / elapsed,
          statusCodes,
          notOk: tally.responses - (statusCodes[expected] ?? 0),
          errors: result.errors + result.timeouts + tally.itemErrors,
          latency: { p50: at(0.5), p99: at(0.99), max: at(1) },
          loadCpu: (cpu.user + cpu.system) / 1e6 / elapsed,
        });
      },
    );
    instance.on('response', (_client, _status, _bytes, responseTime) => {
      tally.responses++;
      latencies.push(responseTime);
    });
  });
}

try {
  const warmup = config.warmup > 0 ? await run(config.warmup) : undefined;
  process.stdout.write(`${JSON.stringify({ event: 'measuring' })}\n`);
  const result = await run(config.duration);
  const idsUsed = counter - config.idStart;
  process.stdout.write(`${JSON.stringify({ event: 'done', result: { ...result, warmup, idsUsed } })}\n`);
} catch (error) {
  process.stderr.write(`load generator failed: ${error?.stack ?? error}\n`);
  process.exit(1);
}
