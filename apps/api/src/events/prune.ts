import type { Logger } from 'pino';
import { describeCauses } from '../causes.ts';
import type { EventLog } from '../store/store.ts';

/** Events deleted per statement: each prune holds the store's write lock only briefly. */
const PRUNE_BATCH = 1_000;
/** Batches per round at most, so a huge backlog is worked off over several rounds. */
const MAX_BATCHES = 100;
const PRUNE_EVERY_MS = 60_000;

/**
 * Deletes events older than `retentionMs`, in bounded batches, now and then every minute (or every
 * `retentionMs`, when shorter). Resuming a stream from before them then answers 410.
 */
export function startEventPruning(events: EventLog, retentionMs: number, log: Logger): { stop(): void } {
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;

  async function round(): Promise<void> {
    let deleted = 0;
    try {
      for (let i = 0; i < MAX_BATCHES && !stopped; i++) {
        const batch = await events.prune({ olderThanMs: retentionMs, limit: PRUNE_BATCH });
        deleted += batch;
        if (batch < PRUNE_BATCH) break;
      }
    } catch (error) {
      log.warn({ reason: describeCauses(error) }, 'event log not pruned');
    }
    if (deleted > 0) log.info({ deleted, retentionMs }, 'events pruned');
    if (!stopped) timer = setTimeout(round, Math.min(PRUNE_EVERY_MS, retentionMs)).unref();
  }

  void round();
  return {
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
