import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { Webhook } from 'standardwebhooks';
import type { WebhookConfig } from '../config.ts';
import type { Delivery, DeliveryOutbox } from '../store/store.ts';
import { retryDelay } from './backoff.ts';
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
  /** Counters (prom-client's, from metrics.ts) for attempts by outcome and for deliveries given up. */
  metrics?: {
    webhookAttempts: { inc(labels: { outcome: 'delivered' | 'retry' | 'failed' }): void };
    webhookFailures: { inc(): void };
  };
};

/**
 * Drains the webhook outbox: claims due deliveries (leased, so several instances never attempt one
 * delivery at the same time), runs up to `concurrency` attempts at once, and records each outcome:
 * delivered; due again after a backoff; or, after `maxAttempts`, failed (a log line and a metric).
 * Polls every `pollIntervalMs` while idle, at once while there is more due.
 */
export function startDeliveryWorker({ outbox, config, log, metrics }: DeliveryWorkerOptions): DeliveryWorker {
  const webhook = new Webhook(config.secret);
  const stopping = new AbortController();
  const abandon = new AbortController();
  const inFlight = new Set<Promise<void>>();
  const backoff = { baseMs: config.backoffBaseMs, maxMs: config.backoffMaxMs };
  const nap = (ms: number) => sleep(ms, undefined, { signal: stopping.signal }).catch(() => {});

  async function attempt(delivery: Delivery): Promise<void> {
    const started = performance.now();
    const outcome = await sendDelivery(delivery, {
      webhook,
      timeoutMs: config.timeoutMs,
      abort: abandon.signal,
    });
    const about = { webhookId: delivery.id, url: redactUrl(delivery.url), attempt: delivery.attempts };
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
      log.warn({ ...about, reason: describe(error) }, 'webhook outcome not recorded');
    }
  }

  async function run(): Promise<void> {
    while (!stopping.signal.aborted) {
      const room = config.concurrency - inFlight.size;
      if (room === 0) {
        // Every slot is busy: go on when one frees, or at once when stopping.
        await Promise.race([...inFlight, nap(config.pollIntervalMs)]);
        continue;
      }
      let claimed: Delivery[] = [];
      try {
        claimed = await outbox.claim({ limit: room, leaseMs: config.leaseMs });
      } catch (error) {
        log.warn({ reason: describe(error) }, 'webhook outbox unavailable');
      }
      for (const delivery of claimed) {
        const running: Promise<void> = attempt(delivery).finally(() => inFlight.delete(running));
        inFlight.add(running);
      }
      // A full claim means more may be due now.
      if (claimed.length < room) await nap(config.pollIntervalMs);
    }
  }

  const running = run();
  return {
    async stop(graceMs) {
      stopping.abort();
      await running;
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

function describe(error: unknown): string {
  const messages: string[] = [];
  for (let e: unknown = error; e instanceof Error && messages.length < 5; e = e.cause)
    messages.push(e.message || e.name);
  return messages.join(': ') || String(error);
}
