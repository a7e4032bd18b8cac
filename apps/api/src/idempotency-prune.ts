import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { describeCauses } from './causes.ts';
import type { IdempotencyKeyStore } from './store/store.ts';

/** Keys deleted per statement: each prune is a short transaction, whatever the backlog. */
export const KEY_PRUNE_BATCH = 1_000;
/** How often the keys are pruned (more often when IDEMPOTENCY_TTL_MS is shorter). */
const KEY_PRUNE_EVERY_MS = 60_000;

export type KeyPruning = { stop(): Promise<void> };

/**
 * Deletes Idempotency-Keys claimed more than `ttlMs` ago, now and then every minute, in batches of
 * `KEY_PRUNE_BATCH` until a batch comes back short. On PostgreSQL every instance prunes; rows
 * another instance is deleting are skipped. A failed round is logged and tried again next time.
 * Expired keys are ignored by claims anyway (store.ts): pruning only bounds the table.
 */
export function startKeyPruning(options: {
  keys: IdempotencyKeyStore;
  ttlMs: number;
  log: Logger;
}): KeyPruning {
  const { keys, ttlMs, log } = options;
  const stopping = new AbortController();
  const everyMs = Math.min(KEY_PRUNE_EVERY_MS, ttlMs);
  const running = (async () => {
    while (!stopping.signal.aborted) {
      let deleted = 0;
      try {
        let batch: number;
        do {
          batch = await keys.prune({ olderThanMs: ttlMs, limit: KEY_PRUNE_BATCH });
          deleted += batch;
        } while (batch === KEY_PRUNE_BATCH && !stopping.signal.aborted);
      } catch (error) {
        log.warn({ reason: describeCauses(error) }, 'idempotency keys not pruned');
      }
      if (deleted > 0) log.info({ deleted, ttlMs }, 'idempotency keys pruned');
      await sleep(everyMs, undefined, { signal: stopping.signal, ref: false }).catch(() => {});
    }
  })();
  return {
    async stop() {
      stopping.abort();
      await running;
    },
  };
}
