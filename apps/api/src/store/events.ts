import { toPlant } from './plants.ts';
import { type Db, type Params, type Statement, statements, type Time, toDate } from './sql.ts';
import type { EventLog, StoredEvent } from './store.ts';

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
 * The event log's reads and pruning, the same on both stores; its appends are part of each store's
 * create and delete, and `watch` is the store's own (its commits, or LISTEN/NOTIFY).
 */
export function eventLog(db: Db, watch: EventLog['watch']): EventLog {
  const scalar = async (statement: Statement, params?: Params) =>
    (await db.all<{ n: bigint }>(statement, params))[0]!.n;
  return {
    after: async (after, limit) =>
      (await db.all<EventRow & { created_at: Time }>(SQL.after, { after, limit })).map(toEvent),
    head: () => scalar(SQL.head),
    prunedThrough: () => scalar(SQL.prunedThrough),
    countAfter: async (after, limit) => Number(await scalar(SQL.countAfter, { after, limit })),
    // The greatest id pruned is recorded in the same transaction (see migration 5).
    prune: (options) =>
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
