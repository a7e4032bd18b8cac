import { toPlant } from './plants.ts';
import { type Db, type Params, type Statement, statements, type Time, toDate } from './sql.ts';
import type { Prune, StoredEvent } from './store.ts';

/** An event as the log keeps it: a deletion keeps only the plant's id. */
type EventRow = Pick<StoredEvent, 'id' | 'type'> & {
  plant_id: bigint;
  name: string | null;
  tag: string | null;
};

function toEvent(row: EventRow & { created_at: Time }): StoredEvent {
  const { id, type, plant_id } = row;
  const createdAt = toDate(row.created_at);
  if (type === 'plant.deleted') return { id, type, plant: { id: plant_id }, createdAt };
  return { id, type, plant: toPlant({ id: plant_id, name: row.name!, tag: row.tag }), createdAt };
}

const SQL = statements('events', {
  after:
    'SELECT id, type, plant_id, name, tag, created_at FROM plant_events WHERE id > @after ORDER BY id LIMIT @limit',
  // Not max(id) alone: pruning every event must not move the head back.
  head: `SELECT coalesce((SELECT max(id) FROM plant_events WHERE id > pruned_through), pruned_through) AS n
    FROM event_log WHERE id = 1`,
  prunedThrough: 'SELECT pruned_through AS n FROM event_log WHERE id = 1',
  countAfter:
    'SELECT count(*) AS n FROM (SELECT 1 FROM plant_events WHERE id > @after ORDER BY id LIMIT @limit) AS following',
  // Oldest first; events another instance is pruning right now are left to it.
  prune: `DELETE FROM plant_events WHERE id IN (SELECT id FROM plant_events
    WHERE created_at < {now - @olderThanMs} ORDER BY id LIMIT @limit {skip locked}) RETURNING id`,
  recordPruned: 'UPDATE event_log SET pruned_through = @through WHERE id = 1 AND pruned_through < @through',
});

/**
 * Calls `listener` whenever events may have been appended: after this process's commits and, on
 * PostgreSQL, on every instance's (LISTEN/NOTIFY). Notifications can be missed; the log is the
 * truth. Returns the function that stops it.
 */
export type Watch = (listener: () => void) => () => void;

/**
 * The log of committed changes, the same on both stores: every create and delete, in commit order,
 * each with an id greater than every id committed before it (a reader that has seen id n never later
 * finds a new event below n). An event exists if and only if its change committed: its append is part
 * of each store's create and delete, and `watch` is the store's own (its commits, or LISTEN/NOTIFY).
 */
export function eventLog(db: Db, watch: Watch) {
  const scalar = async (statement: Statement, params?: Params) =>
    (await db.all<{ n: bigint }>(statement, params))[0]!.n;
  return {
    /** Up to `limit` events with ids greater than `after`, ascending. */
    after: async (after: bigint, limit: number) =>
      (await db.all<EventRow & { created_at: Time }>(SQL.after, { after, limit })).map(toEvent),
    /** The greatest event id, or 0n when the log is empty (and nothing was ever pruned). */
    head: () => scalar(SQL.head),
    /** The greatest id pruned so far, 0n when none: a reader resuming below it has missed events. */
    prunedThrough: () => scalar(SQL.prunedThrough),
    /** How many events have ids greater than `after`, counted no further than `limit` (an index scan of at most that). */
    countAfter: async (after: bigint, limit: number) =>
      Number(await scalar(SQL.countAfter, { after, limit })),
    /**
     * Deletes up to `limit` events older than `olderThanMs`, oldest first; resolves with how many. The
     * greatest id pruned is recorded in the same transaction (see migration 5).
     */
    prune: (options: Prune) =>
      db.transaction(async (tx) => {
        const { rows } = await tx.run<{ id: bigint }>(SQL.prune, options);
        let through = 0n;
        for (const { id } of rows) if (id > through) through = id;
        if (rows.length > 0) await tx.run(SQL.recordPruned, { through });
        return rows.length;
      }),
    watch,
  };
}
