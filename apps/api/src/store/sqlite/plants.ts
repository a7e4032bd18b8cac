import type { PlantWithId } from '@plant-store/schema';
import * as shared from '../plant-rows.ts';
import { bind, type Statement, statements } from '../sql.ts';
import { KeyClaimLostError, PAGE_BUDGET_BYTES, type PlantStore, textBytes } from '../contract.ts';
import type { sqliteCommit } from './commit.ts';
import { type Connection, rowReader } from './connection.ts';

const SQL = statements('sqlite.plants', {
  // A version is its event's id, read under the writer's lock: an INSERT's RETURNING costs a temporary B-tree.
  version: "SELECT coalesce(max(seq), 0) + 1 AS version FROM sqlite_sequence WHERE name = 'plant_events'",
  insert: `INSERT INTO plants (id, name, tag, version) VALUES (@id, @name, @tag, @version)
    ON CONFLICT (id) DO NOTHING`,
  created: `INSERT INTO plant_events (id, type, plant_id, name, tag, created_at)
    VALUES (@version, 'plant.created', @id, @name, @tag, {now})`,
  enqueue: `INSERT INTO webhook_deliveries (id, url, payload, trace_context, next_attempt_at, created_at, updated_at)
    VALUES (@id, @url, @payload, @traceContext, {now}, {now}, {now})`,
});
// Over its budget a page is read row by row: a window function, as on PostgreSQL, costs SQLite twice the rows.
const PAGES = statements('sqlite.plants.page', {
  all: shared.filtered(),
  tag: shared.filtered('tag'),
  prefix: shared.filtered('prefix'),
  both: shared.filtered('both'),
});
// A page's text bytes, read from an index (each length from its row's header): within budget, one all() reads it.
function bytes(filter?: 'tag') {
  return `SELECT coalesce(sum(octet_length(name) + coalesce(octet_length(tag), 0)), 0) FROM plants
    WHERE ${shared.where(filter)} AND id <= coalesce(
      (SELECT id FROM plants WHERE ${shared.where(filter)} ORDER BY id LIMIT 1 OFFSET @limit - 1), 9223372036854775807)`;
}
const BYTES = statements('sqlite.plants.bytes', { all: bytes(), tag: bytes('tag') });


/** The SQLite store's plant writes, in its group commit, and its pages. */
export function sqlitePlants(
  db: Connection,
  engine: ReturnType<typeof sqliteCommit>,
): Pick<PlantStore, 'create' | 'update' | 'delete' | 'list'> {
  const prepare = <R>({ sqlite }: Statement) => db.prepare<unknown[], R>(sqlite.text);
  const pages = new Map(Object.values(PAGES).map((page) => [page, rowReader<shared.PlantRow>(prepare(page))]));
  const sizes = new Map(Object.values(BYTES).map((size) => [size, prepare<bigint>(size).pluck(true)]));
  return {
    async create(plant, { outbox = {}, key, traceContext } = {}) {
      const { deliveries = [], endpointPayload } = outbox;
      // A keyed create is made only while its request holds the key (the write lock keeps it so).
      const created = await engine.transaction((tx) => {
        if (key && tx.exec(shared.SQL.hold, key).rows.length === 0) return shared.CLAIM_LOST;
        const { version } = tx.exec<{ version: bigint }>(SQL.version).rows[0]!;
        // Not `{ ...plant, version }`: Node 20 makes such a copy slowly, in the old generation.
        const row = { id: plant.id, name: plant.name, tag: plant.tag, version };
        if (tx.exec(SQL.insert, row).changes === 0) return false;
        tx.exec(SQL.created, row);
        for (const delivery of deliveries)
          tx.exec(SQL.enqueue, traceContext ? { ...delivery, traceContext } : delivery);
        if (endpointPayload !== undefined)
          tx.exec(shared.SQL.fanOut, { event: 'plant.created', payload: endpointPayload, traceContext });
        if (key) tx.exec(shared.SQL.answer, Object.assign({}, key, { body: key.body ?? null, version }));
        return version;
      }, true);
      if (created === shared.CLAIM_LOST) throw new KeyClaimLostError();
      return created;
    },
    ...shared.plantChanges({
      transaction: (work) => engine.transaction(work, true),
      lockEvents: async () => {},
    }),
    list: (options) =>
      engine.read(() => {
        const { limit, after, maxBytes = PAGE_BUDGET_BYTES } = options;
        const from = shared.pageStart(after);
        if (from === undefined) return { plants: [], more: false };
        const filter = shared.filterOf(options) ?? 'all';
        const page = pages.get(PAGES[filter])!;
        const params = Object.assign({}, options, { from, limit });
        const args = bind(PAGES[filter].sqlite, Object.assign({}, params, { limit: limit + 1 }));
        const size = filter === 'all' || filter === 'tag' ? BYTES[filter] : undefined;
        if (size && sizes.get(size)!.get(...bind(size.sqlite, params))! <= maxBytes) {
          const rows = page.rows(...args);
          return { plants: rows.slice(0, limit).map(shared.toPlant), more: rows.length > limit };
        }
        return byRow(page.iterate(...args), limit, maxBytes);
      }),
  };
}

/** A page read row by row, stopping once its budget is spent. */
function byRow(rows: Iterable<shared.PlantRow>, limit: number, maxBytes: number) {
  const plants: PlantWithId[] = [];
  let bytes = 0;
  for (const row of rows) {
    bytes += textBytes(row);
    if (plants.length === limit || (plants.length > 0 && bytes > maxBytes)) return { plants, more: true };
    plants.push(shared.toPlant(row));
  }
  return { plants, more: false };
}
