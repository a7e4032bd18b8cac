import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { Webhook } from 'standardwebhooks';
import { describeCauses } from '../causes.ts';
import type { WebhookConfig } from '../config.ts';
import type { Delivery, DeliveryOutbox } from '../store/store.ts';
import { retryDelay } from './backoff.ts';
import { type Breaker, createBreaker } from './breaker.ts';
import { redactUrl, sendDelivery } from './send.ts';

export type DeliveryWorker = {
  /**
   * Stops claiming, waits up to `graceMs` for the attempts in flight, then abandons the rest: they
   * are due again at once, for another instance or the next start. Call it before closing the store.
   */
  stop(graceMs: number): Promise<void>;
};

export type DeliveryWorkerOptions = {
  outbox: DeliveryOutbox;
  config: WebhookConfig;
  log: Logger;
  /** prom-client's (from metrics.ts): attempts by outcome, deliveries given up, open circuit breakers. */
  metrics?: {
    webhookAttempts: { inc(labels: { outcome: 'delivered' | 'retry' | 'failed' }): void };
    webhookFailures: { inc(): void };
    webhookCircuitsOpen: { set(value: number): void };
  };
};

/** Most subscriber URLs one round of claims serves. */
const MAX_SUBSCRIBERS = 1_000;
/** Claims in flight at once: the store's connections also serve requests. */
const CLAIMS_AT_ONCE = 4;
/** Delivered rows deleted per statement when pruning: each statement stays short. */
const PRUNE_BATCH = 1_000;
/** How often delivered rows past their retention are looked for (as often as the retention, if shorter). */
const PRUNE_EVERY_MS = 60_000;

/** This process's view of one subscriber URL: its attempts in flight and its circuit breaker. */
type Subscriber = {
  url: string;
  inFlight: number;
  breaker: Breaker;
  /** The last round left due deliveries unclaimed for want of a slot: a freed slot starts a round. */
  saturated: boolean;
};

/**
 * Drains the webhook outbox, one subscriber URL at a time so that none can starve another: each URL
 * gets its own `concurrency` slots and its own circuit breaker (see breaker.ts), and its due
 * deliveries are claimed on their own (leased, so several instances never attempt one delivery at
 * the same time). Records each outcome: delivered; due again after a backoff; or, after
 * `maxAttempts`, failed (a log line and a metric). While a URL's breaker is open its deliveries are
 * neither claimed nor attempted, so they keep their attempts. Polls every `pollIntervalMs`, and at
 * once when a subscriber that had more due frees a slot. Deletes delivered rows past `retentionMs`,
 * in batches.
 */
export function startDeliveryWorker({ outbox, config, log, metrics }: DeliveryWorkerOptions): DeliveryWorker {
  const webhook = new Webhook(config.secret);
  const stopping = new AbortController();
  const abandon = new AbortController();
  const inFlight = new Set<Promise<void>>();
  const subscribers = new Map<string, Subscriber>();
  const backoff = { baseMs: config.backoffBaseMs, maxMs: config.backoffMaxMs };
  const nap = (ms: number) => sleep(ms, undefined, { signal: stopping.signal }).catch(() => {});
  // A saturated subscriber's freed slot ends the nap (or skips the next one) so the next round starts.
  let woken = false;
  let resume: (() => void) | undefined;
  const wake = () => {
    woken = true;
    resume?.();
  };

  function subscriber(url: string): Subscriber {
    let known = subscribers.get(url);
    if (!known) {
      known = { url, inFlight: 0, breaker: createBreaker(config.breaker), saturated: false };
      subscribers.set(url, known);
    }
    return known;
  }

  function countOpenCircuits(): void {
    let open = 0;
    for (const known of subscribers.values()) if (known.breaker.state() !== 'closed') open += 1;
    metrics?.webhookCircuitsOpen.set(open);
  }

  async function attempt(delivery: Delivery, to: Subscriber): Promise<void> {
    const settle = to.breaker.start();
    to.inFlight += 1;
    const started = performance.now();
    const outcome = await sendDelivery(delivery, {
      webhook,
      timeoutMs: config.timeoutMs,
      abort: abandon.signal,
    });
    const about = { webhookId: delivery.id, url: redactUrl(delivery.url), attempt: delivery.attempts };
    const transition = settle(outcome.ok || (outcome.abandoned ? undefined : false));
    if (transition === 'opened') {
      log.warn(
        { url: about.url, failures: config.breaker.failures, retryInMs: config.breaker.cooldownMs },
        'webhook subscriber circuit opened',
      );
    } else if (transition === 'closed') {
      log.info({ url: about.url }, 'webhook subscriber circuit closed');
    }
    if (transition) countOpenCircuits();
    try {
      if (!outcome.ok && outcome.abandoned) {
        // Released now rather than when the lease ends: another instance, or the next start, takes it.
        await outbox.retry(delivery.id, { delayMs: 0, error: outcome.error });
        log.info(about, 'webhook attempt abandoned at shutdown');
      } else if (outcome.ok) {
        await outbox.markDelivered(delivery.id);
        metrics?.webhookAttempts.inc({ outcome: 'delivered' });
        const ms = Math.round(performance.now() - started);
        log.info({ ...about, status: outcome.status, ms }, 'webhook delivered');
      } else if (delivery.attempts >= config.maxAttempts) {
        await outbox.markFailed(delivery.id, outcome.error);
        metrics?.webhookAttempts.inc({ outcome: 'failed' });
        metrics?.webhookFailures.inc();
        log.error({ ...about, error: outcome.error }, 'webhook delivery failed');
      } else {
        const delayMs = retryDelay(delivery.attempts, backoff);
        await outbox.retry(delivery.id, { delayMs, error: outcome.error });
        metrics?.webhookAttempts.inc({ outcome: 'retry' });
        log.warn({ ...about, error: outcome.error, retryInMs: delayMs }, 'webhook attempt failed');
      }
    } catch (error) {
      // Not recorded: the lease runs out and the delivery is attempted again (at least once).
      log.warn({ ...about, reason: describeCauses(error) }, 'webhook outcome not recorded');
    } finally {
      to.inFlight -= 1;
      if (to.saturated) wake();
    }
  }

  /** Claims, for each subscriber with pending deliveries, as many as it has room for. */
  async function claimRound(): Promise<void> {
    let urls: string[];
    try {
      urls = await outbox.pendingUrls({ limit: MAX_SUBSCRIBERS });
    } catch (error) {
      log.warn({ reason: describeCauses(error) }, 'webhook outbox unavailable');
      return;
    }
    const claimFor = async (url: string) => {
      const to = subscriber(url);
      const free = config.concurrency - to.inFlight;
      const limit = to.breaker.allowed(free);
      to.saturated = free === 0 && to.breaker.state() === 'closed';
      if (limit === 0 || stopping.signal.aborted) return;
      let claimed: Delivery[];
      try {
        claimed = await outbox.claim({ url, limit, leaseMs: config.leaseMs });
      } catch (error) {
        log.warn({ reason: describeCauses(error) }, 'webhook outbox unavailable');
        return;
      }
      for (const delivery of claimed) {
        const running: Promise<void> = attempt(delivery, to).finally(() => inFlight.delete(running));
        inFlight.add(running);
      }
      // A full claim means more may be due (a half-open trial is one at a time, whatever is due).
      to.saturated = claimed.length === limit && to.breaker.state() === 'closed';
    };
    for (let i = 0; i < urls.length; i += CLAIMS_AT_ONCE) {
      await Promise.all(urls.slice(i, i + CLAIMS_AT_ONCE).map(claimFor));
    }
    // Forget idle subscribers with nothing pending; an open breaker is kept until it closes.
    const pending = new Set(urls);
    for (const [url, known] of subscribers) {
      if (!pending.has(url) && known.inFlight === 0 && known.breaker.state() === 'closed') {
        subscribers.delete(url);
      }
    }
  }

  async function run(): Promise<void> {
    while (!stopping.signal.aborted) {
      woken = false;
      await claimRound();
      if (woken) continue;
      await Promise.race([
        nap(config.pollIntervalMs),
        new Promise<void>((resolve) => {
          resume = resolve;
        }),
      ]);
      resume = undefined;
    }
  }

  async function prune(): Promise<void> {
    const everyMs = Math.min(PRUNE_EVERY_MS, Math.max(config.pollIntervalMs, config.retentionMs));
    while (!stopping.signal.aborted) {
      let deleted = 0;
      try {
        let batch: number;
        do {
          batch = await outbox.prune({ olderThanMs: config.retentionMs, limit: PRUNE_BATCH });
          deleted += batch;
        } while (batch === PRUNE_BATCH && !stopping.signal.aborted);
      } catch (error) {
        log.warn({ reason: describeCauses(error) }, 'webhook outbox not pruned');
      }
      if (deleted > 0) log.info({ deleted, retentionMs: config.retentionMs }, 'webhook deliveries pruned');
      await nap(everyMs);
    }
  }

  const running = run();
  const pruning = prune();
  return {
    async stop(graceMs) {
      stopping.abort();
      await Promise.all([running, pruning]);
      const grace = new AbortController();
      await Promise.race([
        Promise.allSettled(inFlight),
        sleep(graceMs, undefined, { signal: grace.signal }).catch(() => {}),
      ]);
      grace.abort();
      abandon.abort();
      await Promise.allSettled(inFlight);
    },
  };
}
