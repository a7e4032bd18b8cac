import type { Logger } from 'pino';
import type { WebhookConfig } from '../config/config.ts';
import type { Delivery, DeliveryOutbox, Retry } from '../store/contract.ts';
import { retryDelay } from './backoff.ts';
import { batched } from './naps.ts';
import type { sendDelivery } from './send.ts';

export type Outcome = Awaited<ReturnType<typeof sendDelivery>>;

/**
 * Records each attempt's outcome: delivered (in batches: one write for all that succeeded
 * meanwhile); abandoned at shutdown, due again at once; due again after a backoff; or, after
 * `maxAttempts`, failed (a log line and a metric).
 */
export function outcomeRecorder(
  outbox: DeliveryOutbox,
  config: WebhookConfig,
  log: Logger,
  metrics?: {
    webhookAttempts: { inc(labels: { outcome: 'delivered' | 'retry' | 'failed' }): void };
    webhookFailures: { inc(value?: number): void };
  },
) {
  const backoff = { baseMs: config.backoffBaseMs, maxMs: config.backoffMaxMs };
  const markDelivered = batched((items: { id: string; status: number }[]) =>
    outbox.markDelivered(
      items.map((item) => item.id),
      items.map((item) => item.status),
    ),
  );
  // One write for all that failed meanwhile: dead endpoints fail fast and often, and a write each
  // queued ahead of the healthy endpoints' claims (issue 42).
  const markRetry = batched((retries: Retry[]) => outbox.retryMany(retries));
  return async (delivery: Delivery, outcome: Outcome, about: object, ms: number): Promise<void> => {
    if (!outcome.ok && outcome.abandoned) {
      // Released now rather than when the lease ends: another instance, or the next start, takes it.
      await outbox.retry(delivery.id, { delayMs: 0, error: outcome.error });
      log.info(about, 'webhook attempt abandoned at shutdown');
    } else if (outcome.ok) {
      await markDelivered({ id: delivery.id, status: outcome.status });
      metrics?.webhookAttempts.inc({ outcome: 'delivered' });
      log.info(Object.assign({}, about, { status: outcome.status, ms }), 'webhook delivered');
    } else if (delivery.attempts >= config.maxAttempts) {
      await outbox.markFailed(delivery.id, outcome.error, outcome.status);
      metrics?.webhookAttempts.inc({ outcome: 'failed' });
      metrics?.webhookFailures.inc();
      log.error({ ...about, error: outcome.error }, 'webhook delivery failed');
    } else {
      const delayMs = retryDelay(delivery.attempts, backoff);
      await markRetry({ id: delivery.id, delayMs, error: outcome.error, responseCode: outcome.status });
      metrics?.webhookAttempts.inc({ outcome: 'retry' });
      log.warn(
        Object.assign({}, about, { error: outcome.error, retryInMs: delayMs }),
        'webhook attempt failed',
      );
    }
  };
}
