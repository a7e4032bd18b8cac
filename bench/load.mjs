// The load generator of `pnpm bench`: one autocannon run (after an unmeasured warm-up) against one
// server, in its own process so the harness can pin it to its own core with taskset. Every request
// carries fresh ids from one counter shared by all connections, so no two creates collide.
//
//   node bench/load.mjs '<json config>'
//
// Config: { url, token, scenario, connections, duration, warmup, idMode, idStart, idModulo, batch }.
// With idModulo (reads), the counter wraps: ids cycle through idStart+1 … idModulo.
// Writes JSON lines to stdout: {"event":"measuring"} when the measured phase starts, then
// {"event":"done","result":{…}}. Latencies are autocannon's per-response times (ms, every
// response), kept exactly instead of autocannon's whole-millisecond histogram.
import autocannon from 'autocannon';
import { buildRequest, countBatchAnswer, createsPerRequest, idText, isRead } from './lib/workload.mjs';

const config = JSON.parse(process.argv[2] ?? '{}');
const { url, token, scenario, connections, duration, warmup, idMode, batch } = config;
const perRequest = createsPerRequest(scenario, batch);
/** The answer a conditional GET expects (304 Not Modified): a success, not a non-2xx. */
const expected304 = scenario === 'get-304' ? 304 : undefined;
const non2xxOf = (result) => result.non2xx - (expected304 ? (statusCounts(result)['304'] ?? 0) : 0);
let counter = config.idStart;

function nextIds() {
  const ids = [];
  for (let i = 0; i < perRequest; i++) {
    ids.push(idText(idMode, config.idModulo ? counter % config.idModulo : counter));
    counter++;
  }
  return ids;
}

function emit(event) {
  process.stdout.write(`${JSON.stringify(event)}\n`);
}

/** One autocannon run; resolves with its result and what we measured on the side. */
function run(seconds, measured) {
  const latencies = new Latencies();
  const perSecond = [];
  const tally = { responses: 0, creates: 0, itemErrors: 0, badBatches: 0 };
  let thisSecond = 0;
  const onResponse =
    scenario === 'trpc-batch'
      ? (_status, body) => {
          const { results, errors } = countBatchAnswer(body);
          tally.creates += results;
          tally.itemErrors += errors;
          // An answer that is not one entry per call (failed items are counted above).
          if (results + errors !== perRequest) tally.badBatches++;
        }
      : (status) => {
          if ((status >= 200 && status < 300) || status === expected304) tally.creates++;
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
        headers: isRead(scenario)
          ? { authorization: `Bearer ${token}` }
          : { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        requests: [
          {
            setupRequest: (request) => {
              const { headers, ...built } = buildRequest(scenario, nextIds());
              return { ...request, ...built, ...(headers && { headers: { ...request.headers, ...headers } }) };
            },
            onResponse,
          },
        ],
      },
      (error, result) => {
        clearInterval(ticker);
        if (error) return reject(error);
        const elapsed = (performance.now() - started) / 1000;
        const cpu = process.cpuUsage(cpuBefore);
        resolve({
          result,
          elapsed,
          latencies,
          perSecond,
          tally,
          cpu: (cpu.user + cpu.system) / 1e6 / elapsed,
        });
      },
    );
    const ticker = setInterval(() => {
      perSecond.push(thisSecond);
      thisSecond = 0;
    }, 1000);
    instance.on('response', (_client, _status, _bytes, responseTime) => {
      tally.responses++;
      thisSecond++;
      if (measured) latencies.add(responseTime);
    });
  });
}

/** Every latency of a run (ms), kept in growable Float64Array chunks, for exact percentiles. */
class Latencies {
  chunks = [new Float64Array(1 << 16)];
  filled = 0;
  add(value) {
    let chunk = this.chunks[this.chunks.length - 1];
    if (this.filled === chunk.length) {
      chunk = new Float64Array(chunk.length * 2);
      this.chunks.push(chunk);
      this.filled = 0;
    }
    chunk[this.filled++] = value;
  }
  summary() {
    const parts = this.chunks.map((chunk, i) =>
      i === this.chunks.length - 1 ? chunk.subarray(0, this.filled) : chunk,
    );
    const all = new Float64Array(parts.reduce((n, part) => n + part.length, 0));
    let at = 0;
    for (const part of parts) {
      all.set(part, at);
      at += part.length;
    }
    all.sort();
    const pick = (q) =>
      all.length === 0 ? null : round(all[Math.min(all.length - 1, Math.ceil(q * all.length) - 1)]);
    const mean = all.length === 0 ? null : round(all.reduce((sum, v) => sum + v, 0) / all.length);
    return {
      count: all.length,
      mean,
      p50: pick(0.5),
      p90: pick(0.9),
      p99: pick(0.99),
      p999: pick(0.999),
      max: pick(1),
    };
  }
}

function round(value) {
  return Math.round(value * 1000) / 1000;
}

function statusCounts(result) {
  return Object.fromEntries(Object.entries(result.statusCodeStats).map(([code, { count }]) => [code, count]));
}

try {
  const warm = warmup > 0 ? await run(warmup, false) : undefined;
  emit({ event: 'measuring' });
  const measured = await run(duration, true);
  const { result, elapsed, tally } = measured;
  emit({
    event: 'done',
    result: {
      scenario,
      connections,
      seconds: round(elapsed),
      responses: tally.responses,
      reqPerSec: round(tally.responses / elapsed),
      creates: tally.creates,
      createsPerSec: round(tally.creates / elapsed),
      non2xx: non2xxOf(result),
      statusCodes: statusCounts(result),
      errors: result.errors,
      timeouts: result.timeouts,
      batchItemErrors: tally.itemErrors,
      badBatches: tally.badBatches,
      latency: measured.latencies.summary(),
      autocannonLatency: { p50: result.latency.p50, p99: result.latency.p99, max: result.latency.max },
      perSecond: measured.perSecond,
      loadCpu: round(measured.cpu),
      warmup: warm && {
        seconds: round(warm.elapsed),
        responses: warm.tally.responses,
        creates: warm.tally.creates,
        non2xx: non2xxOf(warm.result),
        errors: warm.result.errors + warm.result.timeouts,
        batchItemErrors: warm.tally.itemErrors,
      },
      idsUsed: counter - config.idStart,
    },
  });
} catch (error) {
  process.stderr.write(`load generator failed: ${error?.stack ?? error}\n`);
  process.exit(1);
}
