// From measured runs to figures: one progress line per run, and the medians of a scenario's runs
// with a note for anything that looked wrong.

import { fmtInt, fmtMs, fmtPct as pct, round1 } from './format.mjs';
import { warn } from './session.mjs';
import { max, median, sum } from './stats.mjs';

export function describeRun(run) {
  const parts = [
    `${fmtInt(run.reqPerSec)} req/s`,
    run.createsPerSec !== run.reqPerSec ? `${fmtInt(run.createsPerSec)} creates/s` : undefined,
    `p50 ${fmtMs(run.latency.p50)} p99 ${fmtMs(run.latency.p99)} ms`,
    `non-2xx ${run.non2xx}`,
    `errors ${runErrors(run)}`,
    `peak RSS ${run.peakRssMb} MB`,
    run.serverCpu !== null ? `server CPU ${pct(run.serverCpu)}` : undefined,
    `load CPU ${pct(run.loadCpu)}`,
  ];
  return parts.filter(Boolean).join(', ');
}

export function runErrors(run) {
  return run.errors + run.timeouts + run.batchItemErrors + (run.badBatches ?? 0);
}

/**
 * Medians over the successful runs of one scenario, and what looked wrong. `kind` is the server's:
 * only the api is expected to exit 0 on SIGTERM.
 */
export function summarize(name, runs, kind = 'api') {
  const ok = runs.filter((run) => !run.error);
  const failed = runs.filter((run) => run.error).map((run) => run.error);
  for (const message of failed) warn(`${name}: a run failed: ${message}`);
  if (ok.length === 0) return { runs: 0, failed: failed.length, error: failed[0] ?? 'no runs' };
  const loadCpu = median(ok.map((run) => run.loadCpu));
  if (loadCpu !== null && loadCpu > 0.9) {
    warn(
      `${name}: the load generator used ${pct(loadCpu)} of its core: the figure may be bounded by the load generator, not the server`,
    );
  }
  for (const run of ok) {
    if (run.stored !== undefined && run.stored < run.acked) {
      warn(
        `${name}: ${run.acked - run.stored} acknowledged creates are missing from the store after the run`,
      );
    }
    const log = run.serverLog;
    if (log) {
      const problems = Object.entries(log.levels)
        .filter(([level]) => Number(level) >= 40)
        .reduce((n, [, c]) => n + c, 0);
      if (problems > 0)
        warn(`${name}: the server logged ${problems} warning/error lines, first: ${log.firstProblem}`);
      const non200 = Object.entries(log.postStatuses).filter(([status]) => status !== '200');
      if (non200.length > 0)
        warn(
          `${name}: the server's access log shows POST answers other than 200: ${non200.map(([s, c]) => `${s}×${c}`).join(', ')}`,
        );
    }
    const exit = run.serverExit;
    if (!kind.startsWith('baseline') && exit && exit.code !== 0) {
      warn(`${name}: the api did not exit cleanly on SIGTERM (${exit.code ?? exit.signal})`);
    }
    const warm = run.warmup;
    if (warm && warm.non2xx + warm.errors + warm.batchItemErrors > 0) {
      warn(
        `${name}: the warm-up saw ${warm.non2xx} non-2xx, ${warm.errors} errors, ${warm.batchItemErrors} failed batch items`,
      );
    }
  }
  return {
    runs: ok.length,
    failed: failed.length,
    reqPerSec: round1(median(ok.map((run) => run.reqPerSec))),
    createsPerSec: round1(median(ok.map((run) => run.createsPerSec))),
    p50: median(ok.map((run) => run.latency.p50)),
    p99: median(ok.map((run) => run.latency.p99)),
    non2xx: sum(ok.map((run) => run.non2xx)),
    errors: sum(ok.map(runErrors)),
    statusCodes: mergeCounts(ok.map((run) => run.statusCodes)),
    peakRssMb: max(ok.map((run) => run.peakRssMb)),
    serverCpu: median(ok.map((run) => run.serverCpu)),
    serverCpuUsPerRequest: median(ok.map((run) => run.serverCpuUsPerRequest)),
    loadCpu,
    perRun: ok.map((run) => Math.round(run.createsPerSec)),
    acked: sum(ok.map((run) => run.acked)),
    stored: ok.every((run) => run.stored !== undefined) ? sum(ok.map((run) => run.stored)) : null,
  };
}

function mergeCounts(list) {
  const total = {};
  for (const counts of list)
    for (const [key, n] of Object.entries(counts ?? {})) total[key] = (total[key] ?? 0) + n;
  return total;
}

/** Drops the bulky per-run arrays from what goes into the JSON, keeping per-second throughput. */
export function stripRuns(runs) {
  return Object.fromEntries(
    Object.entries(runs).map(([name, list]) => [name, list.map(({ rssSamples, ...run }) => run)]),
  );
}
