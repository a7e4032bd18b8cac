import type { Registry } from 'prom-client';

/**
 * A counter and a histogram for the metrics recorded on every request, registered in a prom-client
 * `Registry` like its own metrics and exposed in the same text. prom-client's `inc`/`observe`
 * check and hash their labels object at every call (three a request: a fifth of a GET by id's
 * req/s, see "Going around a library" in docs/architecture.md); here a
 * caller looks up its series by label values (`series(...)`, one Map lookup per label) and records into it
 * with a few additions. metric-series.test.ts fails, saying so, if prom-client stops reading them
 * as its own.
 */
abstract class SeriesMetric<Data> {
  /** The series by their label values, one Map per label: a lookup builds and hashes no string. */
  private readonly byValues = new Map<string | number, unknown>();
  private readonly all: { labels: Record<string, string | number>; data: Data }[] = [];

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
    registry: Registry,
  ) {
    // The registry asks only for name, help, type, aggregator, get() and reset().
    registry.registerMetric(this as never);
  }

  abstract readonly type: 'counter' | 'histogram';
  readonly aggregator = 'sum';
  protected abstract create(): Data;

  /** The series of these label values, in `labelNames` order, created at first use. */
  series(...values: (string | number)[]): Data {
    if (values.length !== this.labelNames.length) {
      throw new Error(`${this.name} takes the labels ${this.labelNames.join(', ')}`);
    }
    let level = this.byValues;
    const last = values.length - 1;
    for (let i = 0; i < last; i++) {
      let next = level.get(values[i]!) as Map<string | number, unknown> | undefined;
      if (next === undefined) {
        next = new Map();
        level.set(values[i]!, next);
      }
      level = next;
    }
    let found = level.get(values[last]!) as { data: Data } | undefined;
    if (found === undefined) {
      const labels = Object.fromEntries(this.labelNames.map((label, i) => [label, values[i]!]));
      const entry = { labels, data: this.create() };
      this.all.push(entry);
      level.set(values[last]!, entry);
      found = entry;
    }
    return found.data;
  }

  protected entries() {
    return this.all;
  }

  reset(): void {
    this.byValues.clear();
    this.all.length = 0;
  }
}

export type CounterSeries = { value: number };

export class SeriesCounter extends SeriesMetric<CounterSeries> {
  readonly type = 'counter';

  protected create(): CounterSeries {
    return { value: 0 };
  }

  async get() {
    const values = this.entries().map(({ labels, data }) => ({ labels, value: data.value }));
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }
}

export type HistogramSeries = { observe(value: number): void };

export class SeriesHistogram extends SeriesMetric<HistogramSeries & { counts: Float64Array; sum: number }> {
  readonly type = 'histogram';

  constructor(
    name: string,
    help: string,
    labelNames: readonly string[],
    private readonly buckets: readonly number[],
    registry: Registry,
  ) {
    super(name, help, labelNames, registry);
  }

  protected create() {
    const { buckets } = this;
    // counts[i]: observations in (buckets[i-1], buckets[i]]; the last slot is above every bucket.
    const counts = new Float64Array(buckets.length + 1);
    const series = {
      counts,
      sum: 0,
      observe(value: number) {
        let i = 0;
        while (i < buckets.length && value > buckets[i]!) i++;
        counts[i]! += 1;
        series.sum += value;
      },
    };
    return series;
  }

  /** What the registry prints: prom-client's layout (cumulative buckets, `le` first, then _sum and _count). */
  async getForPromString() {
    const values = [];
    for (const { labels, data } of this.entries()) {
      let total = 0;
      for (let i = 0; i <= this.buckets.length; i++) {
        total += data.counts[i]!;
        const le = i < this.buckets.length ? this.buckets[i]! : '+Inf';
        values.push({
          labels: { le },
          sharedLabels: labels,
          value: total,
          metricName: `${this.name}_bucket`,
          exemplar: null,
        });
      }
      values.push({ labels: {}, sharedLabels: labels, value: data.sum, metricName: `${this.name}_sum` });
      values.push({ labels: {}, sharedLabels: labels, value: total, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  /** The same values with their labels merged, as `registry.getMetricsAsJSON()` gives them. */
  async get() {
    const data = await this.getForPromString();
    const values = data.values.map(({ labels, sharedLabels, ...rest }) => ({
      ...rest,
      labels: { ...labels, ...sharedLabels },
    }));
    return { ...data, values };
  }
}
