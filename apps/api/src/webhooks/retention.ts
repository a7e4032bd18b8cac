import type { Logger } from 'pino';
import type { WebhookConfig } from '../config/config.ts';
import type { DeliveryOutbox } from '../store/contract.ts';
import { startPruning } from '../store/pruning.ts';

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
