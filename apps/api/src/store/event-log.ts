import { FIELD_COLUMNS, type PlantRow, toPlant } from './plant-columns.ts';
import type { PlantFieldName } from '@plant-store/schema';
import { type Db, type Params, type Statement, statements, type Time, toDate } from './sql.ts';
import type { EventLog, Prune, StoredEvent, Watch } from './contract.ts';

type EventRow = Pick<StoredEvent, 'id' | 'type'> &
  Omit<PlantRow, 'id' | 'version'> & { plant_id: bigint; changed: string | null };

/** A created or updated plant's version is its event's id; a deletion keeps only the plant's id. */
function toEvent(row: EventRow & { created_at: Time }): StoredEvent {
  const { id, type, plant_id } = row;
  const createdAt = toDate(row.created_at);
  if (type === 'plant.deleted') return { id, type, plant: { id: plant_id }, createdAt };
  const plant = toPlant(Object.assign({}, row, { id: plant_id, version: id }));
  if (type === 'plant.created') return { id, type, plant, createdAt };
  return { id, type, plant, changed: row.changed!.split(',') as PlantFieldName[], createdAt };
}

const SQL = statements('events', {
  after: `SELECT id, type, plant_id, ${FIELD_COLUMNS}, changed, created_at FROM plant_events WHERE id > @after ORDER BY id LIMIT @limit`,
  // Not max(id) alone: pruning every event must not move the head back.
  head: `SELECT coalesce((SELECT max(id) FROM plant_events WHERE id > pruned_through), pruned_through) AS n
    FROM event_log WHERE id = 1`,
  prunedThrough: 'SELECT pruned_through AS n FROM event_log WHERE id = 1',
  countAfter:
    'SELECT count(*) AS n FROM (SELECT 1 FROM plant_events WHERE id > @after ORDER BY id LIMIT @limit) AS following',
  prune: `DELETE FROM plant_events WHERE id IN (SELECT id FROM plant_events
    WHERE created_at < {now - @olderThanMs} ORDER BY id LIMIT @limit {skip locked}) RETURNING id`,
  recordPruned: 'UPDATE event_log SET pruned_through = @through WHERE id = 1 AND pruned_through < @through',
});

/** The log of committed changes: a reader at id n never later finds one below n, nor one uncommitted. */
export function eventLog(db: Db, watch: Watch): EventLog {
  const scalar = async (statement: Statement, params?: Params) =>
    (await db.all<{ n: bigint }>(statement, params))[0]!.n;
  return {
    after: async (after: bigint, limit: number) =>
      (await db.all<EventRow & { created_at: Time }>(SQL.after, { after, limit })).map(toEvent),
    /** The greatest event id, or 0n when the log is empty (and nothing was ever pruned). */
    head: () => scalar(SQL.head),
    /** The greatest id pruned so far, 0n when none: a reader resuming below it has missed events. */
    prunedThrough: () => scalar(SQL.prunedThrough),
    /** How many events follow `after`, counted no further than `limit`. */
    countAfter: async (after: bigint, limit: number) =>
      Number(await scalar(SQL.countAfter, { after, limit })),
    /** Deletes old events (see `Prune`), recording the greatest id pruned in the same transaction. */
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
