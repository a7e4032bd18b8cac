import { RequestError } from '../errors.ts';
import type { EventLog } from '../store/contract.ts';

/**
 * Throws 410 when a stream cannot resume after `after`: its events are no longer kept, more than
 * `maxReplay` follow it, or it is past the newest event, so the store never sent it (a client of
 * a store restored from a backup, whose ids start lower again).
 */
export async function refuseResume(events: EventLog, maxReplay: number, after: bigint): Promise<void> {
  if (after < (await events.prunedThrough())) {
    throw new RequestError(
      'gone',
      `The events after ${after} are no longer kept (see EVENTS_RETENTION_MS); start again without a resume id.`,
    );
  }
  // Counted through the index, no further than the bound: one more than it is enough to refuse.
  const following = await events.countAfter(after, maxReplay + 1);
  if (following > maxReplay) {
    throw new RequestError(
      'gone',
      `More than ${maxReplay} events follow ${after}, more than a stream replays (see EVENTS_REPLAY_MAX); ` +
        'start again without a resume id and list the plants to catch up.',
    );
  }
  if (following > 0) return;
  // The store's head, not a hub's: another instance may have sent an event this one has not read yet.
  const newest = await events.head();
  if (after > newest) {
    throw new RequestError(
      'gone',
      `Event ${after} is past the newest event (${newest}): this store never sent it (was it restored from a backup?); ` +
        'start again without a resume id and list the plants to catch up.',
    );
  }
}
