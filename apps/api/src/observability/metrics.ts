import { Counter, collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import { type HistogramSeries, SeriesCounter, SeriesHistogram } from './metric-series.ts';

/** The process's Prometheus metrics (prom-client), served at /metrics. */
export type Metrics = ReturnType<typeof createMetrics>;

/**
 * Reads the webhook outbox's depth when scraped: pending and failed deliveries, each counted up to
 * `cap` only, so a scrape costs the same however large the outbox grows.
 */
export type OutboxDepth = (options: { cap: number }) => Promise<Record<string, number> | undefined>;

/** The outbox depth gauge reads at most this many (a value of 10,000 means "at least"). */
export const OUTBOX_DEPTH_CAP = 10_000;

/**
 * Request counts and latency by route template (never the raw path: ids would explode the label
 * set), status and token name; store call latency by operation; where rate-limit counters are
 * kept; webhook outbox depth and failures; and prom-client's default process metrics (CPU, memory, event-loop lag, GC).
 */
export function createMetrics({
  outboxDepth,
  droppedLogLines = () => 0,
}: {
  outboxDepth?: OutboxDepth;
  /** Log lines the process's logger dropped (log.ts). */
  droppedLogLines?: () => number;
} = {}) {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const metrics = {
    registry,
    requests: new SeriesCounter(
      'plant_store_http_requests_total',
      'HTTP requests answered, by method, route template, status and token name',
      ['method', 'route', 'status', 'token'],
      registry,
    ),
    requestSeconds: new SeriesHistogram(
      'plant_store_http_request_duration_seconds',
      'Time from request to answer, by method, route template and status',
      ['method', 'route', 'status'],
      [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registry,
    ),
    storeSeconds: new SeriesHistogram(
      'plant_store_store_operation_duration_seconds',
      'Time of store calls (a create includes its durable commit), by operation and outcome',
      ['operation', 'outcome'],
      [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5],
      registry,
    ),
    rateLimitBackend: new Gauge({
      name: 'plant_store_rate_limit_backend',
      help: 'Where rate-limit counters are kept now (1): redis (shared by instances) or memory (this instance only)',
      labelNames: ['backend'] as const,
      registers: [registry],
    }),
    webhookOutbox: new Gauge({
      name: 'plant_store_webhook_outbox_depth',
      help: `Webhook deliveries in the outbox, by status (pending, failed), counted up to ${OUTBOX_DEPTH_CAP}`,
      labelNames: ['status'] as const,
      registers: [registry],
      async collect() {
        const counts = await outboxDepth?.({ cap: OUTBOX_DEPTH_CAP });
        if (counts) for (const [status, n] of Object.entries(counts)) this.set({ status }, n);
      },
    }),
    webhookFailures: new Counter({
      name: 'plant_store_webhook_deliveries_failed_total',
      help: 'Webhook deliveries given up after their last attempt',
      registers: [registry],
    }),
    webhookCircuitsOpen: new Gauge({
      name: 'plant_store_webhook_circuits_open',
      help: 'Subscriber URLs whose circuit breaker is open or half-open in this process',
      registers: [registry],
    }),
    webhookAttempts: new Counter({
      name: 'plant_store_webhook_attempts_total',
      help: 'Webhook delivery attempts, by outcome',
      labelNames: ['outcome'] as const,
      registers: [registry],
    }),
    logLinesDropped: new Counter({
      name: 'plant_store_log_lines_dropped_total',
      help: 'Log lines dropped because stdout was not read fast enough (8 MiB of lines were waiting)',
      registers: [registry],
      collect() {
        this.reset();
        this.inc(droppedLogLines());
      },
    }),
  };
  setRateLimitBackend(metrics, 'memory');
  return metrics;
}

/** Records where rate-limit counters are kept from now on. */
export function setRateLimitBackend(
  metrics: { rateLimitBackend: Gauge<'backend'> },
  backend: 'redis' | 'memory',
): void {
  metrics.rateLimitBackend.set({ backend: 'redis' }, backend === 'redis' ? 1 : 0);
  metrics.rateLimitBackend.set({ backend: 'memory' }, backend === 'memory' ? 1 : 0);
}

/** Times every method of a store (or any object of async functions) into `storeSeconds`. */
export function instrumentStore<T extends object>(store: T, metrics: Metrics): T {
  const timed: Record<string, unknown> = {};
  for (const [name, member] of Object.entries(store)) {
    if (typeof member !== 'function') {
      timed[name] = member;
      continue;
    }
    const succeeded = outcomeTimer(metrics, name, 'ok');
    const threw = outcomeTimer(metrics, name, 'error');
    timed[name] = (...args: unknown[]) => {
      const started = performance.now();
      try {
        return Promise.resolve(member.apply(store, args)).then(
          (result) => {
            succeeded(started);
            return result;
          },
          (error: unknown) => {
            threw(started);
            throw error;
          },
        );
      } catch (error) {
        threw(started);
        return Promise.reject(error);
      }
    };
  }
  return timed as T;
}

/**
 * Records a store call's time since `started` into its operation and outcome's series, looked up at
 * the first call, so only outcomes that happened are exposed.
 */
function outcomeTimer(metrics: Metrics, operation: string, outcome: 'ok' | 'error') {
  let series: HistogramSeries | undefined;
  return (started: number) => {
    series ??= metrics.storeSeconds.series(operation, outcome);
    series.observe((performance.now() - started) / 1000);
  };
}
