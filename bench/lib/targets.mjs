// The targets of issue 3, each with its figure and PASS/FAIL (n/a when this run has no figure).

import { fmtCount, fmtMs, fmtRatio } from './format.mjs';

export function targets(results, settings) {
  const list = [];
  const add = (target, figure, pass) =>
    list.push({
      target,
      figure,
      result: pass === null || pass === undefined ? 'n/a' : pass ? 'PASS' : 'FAIL',
    });
  /** A ratio that must reach `min`; n/a without one. */
  const atLeast = (target, r, min) => add(target, fmtRatio(r), r === null ? null : r >= min);
  const c = results.compare?.summary;
  if (c) {
    const base = c.baseline;
    const rest = c.rest;
    if (rest && base) {
      atLeast('REST create ≥ 0.60× baseline req/s', rest.vsBaseline, 0.6);
      add(
        'REST p99 ≤ 2× baseline p99',
        rest.p99 === null || rest.p99 === undefined
          ? 'n/a'
          : `${fmtMs(rest.p99)} ms vs ${fmtMs(base.p99)} ms (${fmtRatio(rest.p99VsBaseline)})`,
        rest.p99VsBaseline === null ? null : rest.p99VsBaseline <= 2,
      );
      add(
        'REST zero non-2xx (and no errors)',
        rest.runs ? `${rest.non2xx} non-2xx, ${rest.errors} errors` : 'n/a',
        rest.runs ? rest.non2xx === 0 && rest.errors === 0 : null,
      );
    }
    const batch = c['trpc-batch'];
    if (batch && base) {
      atLeast(`tRPC batched (${settings.batch}/request) ≥ 0.60× baseline creates/s`, batch.vsBaseline, 0.6);
    }
    const one = c.trpc;
    if (one && base) {
      atLeast('tRPC one call per request ≥ 0.30× baseline creates/s', one.vsBaseline, 0.3);
    }
    const pg = c.postgres;
    if (pg && base)
      add('PostgreSQL REST create (no target; ratio vs baseline)', fmtRatio(pg.vsBaseline), null);
    const checked = Object.values(c).filter((r) => r.runs > 0 && r.stored !== null && r.stored !== undefined);
    const lost = checked.reduce(
      (n, s) => n + (s.stored === null || s.stored === undefined ? 0 : Math.max(0, s.acked - s.stored)),
      0,
    );
    if (checked.length > 0) {
      add('Every acknowledged create is in the store after the run (check)', `${lost} missing`, lost === 0);
    }
  }
  const s = results.soak;
  if (s) {
    add(
      `Soak peak RSS ≤ 150 MB (${s.seconds} s)`,
      s.error ? 'failed' : `${s.peakRssMb} MB`,
      s.error ? false : s.peakRssMb <= 150,
    );
    add(
      `Soak: no upward RSS trend after warm-up (slope ≤ ${settings.soakMaxSlope} MB/min over ${s.trendWindow ?? 'n/a'})`,
      s.error || s.trendMbPerMin === null ? 'n/a' : `${s.trendMbPerMin} MB/min`,
      s.error ? false : s.trendMbPerMin === null ? null : s.trendMbPerMin <= settings.soakMaxSlope,
    );
  }
  const cs = results.cold;
  if (cs) {
    add(
      'Cold start (spawn to first 200) ≤ 300 ms',
      cs.api.medianMs === null ? 'failed' : `${cs.api.medianMs} ms`,
      cs.api.medianMs === null ? false : cs.api.medianMs <= 300,
    );
  }
  const g = results.growth;
  if (g && g.sizes.length > 1) {
    const first = g.sizes[0];
    const last = g.sizes[g.sizes.length - 1];
    atLeast(
      `Create throughput at ${fmtCount(last)} stored ≥ 0.8× at ${fmtCount(first)}`,
      g.summary[last].vsFirst,
      0.8,
    );
  }
  return list;
}
