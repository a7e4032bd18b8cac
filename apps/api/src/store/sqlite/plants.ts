import type { PlantWithId } from '@plant-store/schema';
import { currentTraceparent } from '../../tracing/commit.ts';
import { type PlantRow, pageStart, toPlant } from '../plants.ts';
import { statements } from '../sql.ts';
import {
  KeyClaimLostError,
  type KeyedAnswer,
  PAGE_BUDGET_BYTES,
  type PlantStore,
  textBytes,
} from '../store.ts';
import type { SqliteTx, sqliteCommit } from './commit.ts';
import type { Connection } from './connection.ts';

const SQL = statements('sqlite.plants', {
  insert: 'INSERT INTO plants (id, name, tag) VALUES (@id, @name, @tag) ON CONFLICT (id) DO NOTHING',
  delete: 'DELETE FROM plants WHERE id = @id',
  created: `INSERT INTO plant_events (type, plant_id, name, tag, created_at)
    VALUES ('plant.created', @id, @name, @tag, {now})`,
  deleted: "INSERT INTO plant_events (type, plant_id, created_at) VALUES ('plant.deleted', @id, {now})",
  enqueue: `INSERT INTO webhook_deliveries (id, url, payload, trace_context, next_attempt_at, created_at, updated_at)
    VALUES (@id, @url, @payload, @traceContext, {now}, {now}, {now})`,
  // One delivery per enabled endpoint, as the table holds them in this transaction.
  fanOut: `
    INSERT INTO webhook_deliveries (id, endpoint_id, url, event, payload, trace_context, next_attempt_at, created_at, updated_at)
    SELECT 'msg_' || lower(hex(randomblob(16))), id, url, 'plant.created', @payload, @traceContext, {now}, {now}, {now}
    FROM webhook_endpoints WHERE disabled_at IS NULL`,
  holds: `SELECT 1 AS one FROM idempotency_keys
    WHERE token_name = @tokenName AND key = @key AND claim = @claim AND status IS NULL`,
  complete: `UPDATE idempotency_keys SET status = @status, body = @body
    WHERE token_name = @tokenName AND key = @key AND claim = @claim`,
});
/** What a keyed create or delete answers when its request no longer holds the key. */
const CLAIM_LOST = Symbol('claim lost');

/** A `plants` row read with `.raw()`: id, name, tag. */
type PlantTuple = [bigint, string, string | null];

/**
 * The SQLite store's plant writes, in its group commit (a duplicate id fails only its own create, and
 * enqueues none of the deliveries it was given), and its pages, read on its connection.
 */
export function sqlitePlants(
  db: Connection,
  engine: ReturnType<typeof sqliteCommit>,
): Pick<PlantStore, 'create' | 'delete' | 'list'> {
  /**
   * A change carrying `answer` is made only while its request holds the key (the transaction holds
   * the write lock, so nobody takes it over in between), and its answer is stored with it.
   */
  async function change(answer: KeyedAnswer | undefined, make: (tx: SqliteTx) => boolean) {
    const changed = await engine.transaction((tx) => {
      if (answer && tx.exec(SQL.holds, answer).rows.length === 0) return CLAIM_LOST;
      const made = make(tx);
      if (made && answer) tx.exec(SQL.complete, answer);
      return made;
    }, true);
    if (changed === CLAIM_LOST) throw new KeyClaimLostError();
    return changed;
  }

  const select = db.prepare<[bigint, number], PlantRow>(
    'SELECT id, name, tag FROM plants WHERE id >= ? ORDER BY id LIMIT ?',
  );
  // The same page as rows of [id, name, tag]: one call reads them all (see `list`).
  const selectRaw = db.prepare<[bigint, number], PlantTuple>(select.source).raw(true);
  // What a page's name and tag text costs the budget (`textBytes`), summed by SQLite over the
  // page's id range: octet_length (the UTF-8 bytes, as Buffer.byteLength counts) of a column is read
  // from its row's header, so even a page of megabyte rows costs this no text reading.
  const pageBytes = db
    .prepare<{ from: bigint; limit: number }, bigint>(
      `SELECT coalesce(sum(octet_length(name) + coalesce(octet_length(tag), 0)), 0) FROM plants
       WHERE id >= @from AND id <= coalesce(
         (SELECT id FROM plants WHERE id >= @from ORDER BY id LIMIT 1 OFFSET @limit - 1), 9223372036854775807)`,
    )
    .pluck(true);

  return {
    create(plant, outbox = [], answer, endpointPayload) {
      const traceContext = currentTraceparent();
      return change(answer, (tx) => {
        if (tx.exec(SQL.insert, plant).changes === 0) return false;
        tx.exec(SQL.created, plant);
        for (const delivery of outbox)
          tx.exec(SQL.enqueue, traceContext ? { ...delivery, traceContext } : delivery);
        if (endpointPayload !== undefined) tx.exec(SQL.fanOut, { payload: endpointPayload, traceContext });
        return true;
      });
    },
    delete: (id, answer) =>
      change(answer, (tx) => {
        if (tx.exec(SQL.delete, { id }).changes === 0) return false;
        tx.exec(SQL.deleted, { id });
        return true;
      }),
    list: ({ limit, after, maxBytes = PAGE_BUDGET_BYTES }) =>
      engine.read(() => {
        const from = pageStart(after);
        if (from === undefined) return { plants: [], more: false };
        // The usual page fits its budget: SQLite says so first (without reading the text out), then
        // one all() reads it, cheaper than stepping row by row.
        if (pageBytes.get({ from, limit })! <= maxBytes) {
          const rows = selectRaw.all(from, limit + 1);
          const plants: PlantWithId[] = [];
          for (let i = 0; i < rows.length && i < limit; i++) {
            const [id, name, tag] = rows[i]!;
            plants.push(tag === null ? { id, name } : { id, name, tag });
          }
          return { plants, more: rows.length > limit };
        }
        // Row by row, so a page stops reading once its budget is spent (all() would read `limit` rows).
        const plants: PlantWithId[] = [];
        let bytes = 0;
        for (const row of select.iterate(from, limit + 1)) {
          bytes += textBytes(row);
          // Leaving the loop ends the statement.
          if (plants.length === limit || (plants.length > 0 && bytes > maxBytes))
            return { plants, more: true };
          plants.push(toPlant(row));
        }
        return { plants, more: false };
      }),
  };
}
