import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { describeCauses } from '../causes.ts';

/** Rows deleted per statement: each prune is a short transaction, whatever the backlog. */
export const PRUNE_BATCH = 1_000;
/** How often a table is pruned (more often when its retention is shorter). */
const PRUNE_EVERY_MS = 60_000;

export type Pruning = { stop(): Promise<void> };

/** The pause between rounds for rows kept `olderThanMs`: a minute, or that when shorter (not below `minEveryMs`). */
export const pruneEveryMs = (olderThanMs: number, minEveryMs = 0) =>
  Math.min(PRUNE_EVERY_MS, Math.max(minEveryMs, olderThanMs));

/**
 * Deletes what is older than `olderThanMs` from one table, now and then every minute (or every
 * `olderThanMs`, when shorter), in batches of `PRUNE_BATCH` until a batch comes back short. A
 * failed round is logged and tried again next time. On PostgreSQL every instance prunes; rows
 * another instance is deleting are skipped by the stores.
 */
export function startPruning(options: {
  /** What is pruned, for the logs: "events", "idempotency keys", "webhook deliveries". */
  what: string;
  prune(batch: { olderThanMs: number; limit: number }): Promise<number>;
  olderThanMs: number;
  log: Logger;
  /** The shortest pause between rounds (default: none beyond `olderThanMs`). */
  minEveryMs?: number;
}): Pruning {
  const { what, prune, olderThanMs, log } = options;
  const everyMs = pruneEveryMs(olderThanMs, options.minEveryMs);
  const stopping = new AbortController();
  const running = (async () => {
    while (!stopping.signal.aborted) {
      let deleted = 0;
      try {
        let batch: number;
        do {
          batch = await prune({ olderThanMs, limit: PRUNE_BATCH });
          deleted += batch;
        } while (batch === PRUNE_BATCH && !stopping.signal.aborted);
      } catch (error) {
        log.warn({ reason: describeCauses(error) }, `${what} not pruned`);
      }
      if (deleted > 0) log.info({ deleted, retentionMs: olderThanMs }, `${what} pruned`);
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
