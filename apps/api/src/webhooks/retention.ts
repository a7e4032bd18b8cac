import type { Logger } from 'pino';
import { describeCauses } from '../causes.ts';
import type { WebhookConfig } from '../config/config.ts';
import type { DeliveryOutbox } from '../store/contract.ts';
import { PRUNE_BATCH, pruneEveryMs, startPruning } from '../store/pruning.ts';
import { scheduleSpanMs } from './backoff.ts';
import type { outcomeRecorder } from './outcomes.ts';
import type { Subscriber } from './subscriber.ts';

/** What an expired delivery's `lastError` says (listings, `webhooks failed`). */
export const EXPIRED_ERROR =
  'expired: waited longer than the retry schedule while its circuit breaker was open';

/**
 * Deletes delivered deliveries past `retentionMs` and failed ones past `failedRetentionMs`, in
 * batches: a receiver that always fails must not grow the table without end either.
 */
export function startOutboxRetention(outbox: DeliveryOutbox, config: WebhookConfig, log: Logger) {
  const every = { minEveryMs: config.pollIntervalMs, log };
  const runs = [
    startPruning({
      what: 'webhook deliveries',
      prune: (batch) => outbox.prune(batch),
      olderThanMs: config.retentionMs,
      ...every,
    }),
    startPruning({
      what: 'failed webhook deliveries',
      prune: (batch) => outbox.pruneFailed(batch),
      olderThanMs: config.failedRetentionMs,
      ...every,
    }),
  ];
  return { stop: () => Promise.all(runs.map((run) => run.stop())) };
}

/**
 * An open breaker holds a subscriber's deliveries back without spending their attempts, so a
 * receiver dead for a day would keep a day of them pending. `expire(open)` fails those of the
 * subscribers whose breaker is open due for longer than the schedule's span (`scheduleSpanMs`, 3 h 10 min
 * 45 s by default): the most a delivery could have waited had it been attempted. At most once a minute
 * (or a span, when shorter), and not past `stopping`; one error line per subscriber, and the
 * deliveries-failed metric.
 */
export function outboxExpiry(
  outbox: DeliveryOutbox,
  config: WebhookConfig,
  log: Logger,
  stopping: AbortSignal,
  metrics?: Parameters<typeof outcomeRecorder>[3],
) {
  const olderThanMs = scheduleSpanMs(config);
  const everyMs = pruneEveryMs(olderThanMs, config.pollIntervalMs);
  let due = 0;
  let running = false;

  async function expire(open: readonly Subscriber[]): Promise<void> {
    const endpointIds: string[] = [];
    const urls: string[] = [];
    const byKey = new Map<string, { to: Subscriber; expired: number }>();
    for (const to of open) {
      const key = 'url' in to.target ? to.target.url : to.target.endpointId;
      ('url' in to.target ? urls : endpointIds).push(key);
      byKey.set(key, { to, expired: 0 });
    }
    try {
      let batch: number;
      do {
        const expired = await outbox.expire({
          endpointIds,
          urls,
          olderThanMs,
          limit: PRUNE_BATCH,
          error: EXPIRED_ERROR,
        });
        for (const of of expired) {
          const known = byKey.get('url' in of ? of.url : of.endpointId);
          if (known) known.expired += 1;
        }
        batch = expired.length;
      } while (batch === PRUNE_BATCH && !stopping.aborted);
    } catch (error) {
      log.warn({ reason: describeCauses(error) }, 'webhook deliveries not expired');
    }
    for (const { to, expired } of byKey.values()) {
      if (expired === 0) continue;
      metrics?.webhookFailures.inc(expired);
      log.error({ ...to.shown, expired, afterMs: olderThanMs }, 'webhook deliveries expired');
    }
  }

  return {
    /** Starts a round for those of `failing` whose breaker is open, when one is due and none runs. */
    expire(failing: readonly Subscriber[]): Promise<void> | undefined {
      const open = failing.filter((to) => to.breaker.state() !== 'closed');
      if (running || open.length === 0 || performance.now() < due) return undefined;
      running = true;
      due = performance.now() + everyMs;
      return expire(open).finally(() => {
        running = false;
      });
    },
  };
}
