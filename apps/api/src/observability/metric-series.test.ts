import { Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { SeriesCounter, SeriesHistogram } from './metric-series.ts';
import { createMetrics, instrumentStore } from './metrics.ts';

const BUCKETS = [0.001, 0.01, 0.1, 1];
// On a bound, between bounds, above the last, zero, and a value that repeats.
const OBSERVED = [0, 0.001, 0.0011, 0.01, 0.05, 0.05, 0.1, 0.9999, 1, 1.5, 42];
// Label values as they come: a route template, a number, and text the exposition must escape.
const SERIES: [string, string, number][] = [
  ['GET', '/plants/{id}', 200],
  ['POST', '/plants', 409],
  ['GET', 'quote " back\\slash \n newline', 500],
];

/**
 * metric-series.ts plugs into prom-client's Registry as a metric of its own (duck typing), kept by
 * the rule of docs/architecture.md (Going around a library): prom-client's `inc`/`observe` cost a
 * GET by id a fifth of its req/s. This is what a prom-client upgrade can break.
 */
const PROM_CLIENT_CHANGED =
  "prom-client no longer reads metric-series.ts's metrics as its own: follow its Counter and Histogram (get, getForPromString) or go back to them (docs/architecture.md, Going around a library)";

/** The same recordings into prom-client's own metrics and into ours, each in its own registry. */
function recordBoth() {
  const reference = new Registry();
  const counter = new Counter({
    name: 'c_total',
    help: 'a counter',
    labelNames: ['method', 'route', 'status'],
    registers: [reference],
  });
  const histogram = new Histogram({
    name: 'h_seconds',
    help: 'a histogram',
    labelNames: ['method', 'route', 'status'],
    buckets: BUCKETS,
    registers: [reference],
  });
  const ours = new Registry();
  const seriesCounter = new SeriesCounter('c_total', 'a counter', ['method', 'route', 'status'], ours);
  const seriesHistogram = new SeriesHistogram(
    'h_seconds',
    'a histogram',
    ['method', 'route', 'status'],
    BUCKETS,
    ours,
  );
  SERIES.forEach(([method, route, status], n) => {
    for (const value of OBSERVED.slice(n)) {
      counter.inc({ method, route, status });
      seriesCounter.series(method, route, status).value += 1;
      histogram.observe({ method, route, status }, value * (n + 1));
      seriesHistogram.series(method, route, status).observe(value * (n + 1));
    }
  });
  return { reference, ours };
}

describe('series metrics', () => {
  it('expose exactly what prom-client exposes for the same recordings, as text and as JSON', async () => {
    const { reference, ours } = recordBoth();
    const text = await ours.metrics();
    expect(text, PROM_CLIENT_CHANGED).toBe(await reference.metrics());
    expect(text).toContain('h_seconds_bucket{le="0.01",method="GET",route="/plants/{id}",status="200"} 4');
    expect(text).toContain('route="quote \\" back\\\\slash \\n newline"');
    expect(await ours.getMetricsAsJSON(), PROM_CLIENT_CHANGED).toEqual(await reference.getMetricsAsJSON());
  });

  it('are emptied by the registry reset, and take exactly their labels', async () => {
    const { ours } = recordBoth();
    ours.resetMetrics();
    expect(await ours.metrics()).toBe(
      '# HELP c_total a counter\n# TYPE c_total counter\n\n# HELP h_seconds a histogram\n# TYPE h_seconds histogram\n',
    );
    const counter = new SeriesCounter('x_total', 'x', ['a', 'b'], new Registry());
    expect(() => counter.series('only one')).toThrow('x_total takes the labels a, b');
  });
});

describe('instrumentStore', () => {
  const store = {
    kind: 'test',
    get: async (id: number) => ({ id }),
    missing: async () => {
      throw new Error('gone');
    },
    broken: (): Promise<never> => {
      throw new Error('thrown before any promise');
    },
  };

  it('times each call by operation and outcome, passing results and errors through', async () => {
    const metrics = createMetrics();
    const timed = instrumentStore(store, metrics);
    expect(timed.kind).toBe('test');
    expect(await timed.get(7)).toEqual({ id: 7 });
    expect(await timed.get(8)).toEqual({ id: 8 });
    await expect(timed.missing()).rejects.toThrow('gone');
    // A synchronous throw still comes back as a rejection, and counts as an error.
    const call = timed.broken();
    await expect(call).rejects.toThrow('thrown before any promise');
    const text = await metrics.registry.metrics();
    const count = (operation: string, outcome: string) =>
      text.match(
        new RegExp(
          `plant_store_store_operation_duration_seconds_count\\{operation="${operation}",outcome="${outcome}"\\} (\\d+)`,
        ),
      )?.[1];
    expect([count('get', 'ok'), count('missing', 'error'), count('broken', 'error')]).toEqual([
      '2',
      '1',
      '1',
    ]);
    // Only outcomes that happened are series.
    expect([count('get', 'error'), count('missing', 'ok'), count('kind', 'ok')]).toEqual([
      undefined,
      undefined,
      undefined,
    ]);
  });
});
