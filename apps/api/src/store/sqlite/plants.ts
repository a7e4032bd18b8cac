import type { PlantWithId } from '@plant-store/schema';
import { KeyClaimLostError, PAGE_BUDGET_BYTES, type PlantStore } from '../contract.ts';
import { budgeted, PREFIX_INDEX_ROWS, prefixRange, SCAN_ROWS, type Scanned } from '../filtered-pages.ts';
import {
  FIELD_BYTES,
  FIELD_COLUMNS,
  FIELD_PARAMS,
  PLANT_COLUMNS,
  type PlantRow,
  textBytes,
  toPlant,
  toRow,
} from '../plant-columns.ts';
import * as shared from '../plant-rows.ts';
import { bind, type Statement, statements } from '../sql.ts';
import type { SqliteTx, sqliteCommit } from './commit.ts';
import { type Connection, rowBuilder } from './connection.ts';

const SQL = statements('sqlite.plants', {
  // A version is its event's id, read under the writer's lock: an INSERT's RETURNING costs a temporary B-tree.
  version: "SELECT coalesce(max(seq), 0) + 1 AS version FROM sqlite_sequence WHERE name = 'plant_events'",
  insert: `INSERT INTO plants (${PLANT_COLUMNS}) VALUES (@id, ${FIELD_PARAMS}, @version)
    ON CONFLICT (id) DO NOTHING`,
  created: `INSERT INTO plant_events (id, type, plant_id, ${FIELD_COLUMNS}, created_at)
    VALUES (@version, 'plant.created', @id, ${FIELD_PARAMS}, {now})`,
  enqueue: `INSERT INTO webhook_deliveries (id, url, payload, trace_context, next_attempt_at, created_at, updated_at)
    VALUES (@id, @url, @payload, @traceContext, {now}, {now}, {now})`,
});
// Over its budget a page is read row by row: a window function, as on PostgreSQL, costs SQLite twice the rows.
const PAGES = statements('sqlite.plants.page', {
  all: shared.filtered(),
  tag: shared.filtered('tag'),
});
// A page's text bytes, read from an index (each length from its row's header): within budget, one all() reads it.
function bytes(filter?: 'tag') {
  return `SELECT coalesce(sum(${FIELD_BYTES}), 0) FROM plants
    WHERE ${shared.where(filter)} AND id <= coalesce(
      (SELECT id FROM plants WHERE ${shared.where(filter)} ORDER BY id LIMIT 1 OFFSET @limit - 1), 9223372036854775807)`;
}
const BYTES = statements('sqlite.plants.bytes', { all: bytes(), tag: bytes('tag') });

/**
 * A `name_prefix` page: how many names start with it (a range of plants_name, counted up to `@hits`)
 * says which way. A rare one's plants are looked up by id, in id order; a common one's page is the
 * first `@budget` plants from `@from` (of the tag, through plants_tag), filtered in the same pass, so
 * a full page stops where it fills and only a short one asks where its budget ended.
 */
const PREFIX_PAGES = statements('sqlite.plants.prefix', {
  hitCount: `SELECT count(*) FROM (SELECT 1 FROM plants WHERE name >= @low AND name < @high LIMIT @hits) AS hit`,
  hits: `SELECT ${PLANT_COLUMNS} FROM plants WHERE id IN (SELECT id FROM plants WHERE name >= @low AND name < @high)
    AND id >= @from AND (@tag IS NULL OR ${shared.TAG}) ORDER BY id LIMIT @limit`,
  scan: budgetScan(),
  scanTag: budgetScan(shared.TAG),
});
function budgetScan(tag?: string) {
  return `SELECT ${PLANT_COLUMNS} FROM (SELECT ${PLANT_COLUMNS} FROM plants
      WHERE ${tag ? `${tag} AND ` : ''}id >= @from ORDER BY id LIMIT @budget) AS scanned
    WHERE ${shared.PREFIX} ORDER BY id LIMIT @limit`;
}

/** The SQLite store's plant writes, in its group commit, and its pages. */
export function sqlitePlants(
  db: Connection,
  engine: ReturnType<typeof sqliteCommit>,
): Pick<PlantStore, 'create' | 'update' | 'delete' | 'list'> {
  const prepare = <R>({ sqlite }: Statement) => db.prepare<unknown[], R>(sqlite.text);
  const pages = new Map(Object.values(PAGES).map((page) => [page, prepare<unknown[]>(page).raw(true)]));
  // Rows come as arrays, made objects by column name (the first page's columns: every page has them).
  const rowOf = rowBuilder<PlantRow>(
    pages
      .get(PAGES.all)!
      .columns()
      .map(({ name }) => name),
  );
  const sizes = new Map(Object.values(BYTES).map((size) => [size, prepare<bigint>(size).pluck(true)]));
  const hitCount = prepare<bigint>(PREFIX_PAGES.hitCount).pluck(true);
  const prefixPages = new Map(
    [PREFIX_PAGES.hits, PREFIX_PAGES.scan, PREFIX_PAGES.scanTag].map((page) => [
      page,
      prepare<unknown[]>(page).raw(true),
    ]),
  );
  const scans = { prefix: shared.SQL['scanned.prefix'], both: shared.SQL['scanned.both'] };
  const scanned = { prefix: prepare<Scanned>(scans.prefix), both: prepare<Scanned>(scans.both) };
  // Whether the fan-out would enqueue anything: asked once a commit, not once a change.
  const subscribed = (tx: SqliteTx, event: string) =>
    tx.kept(`subscribed ${event}`, () => tx.exec(shared.SQL.subscribed, { event }).rows.length > 0);
  return {
    async create(plant, { outbox = {}, key, traceContext } = {}) {
      const { deliveries = [], endpointPayload } = outbox;
      // A keyed create is made only while its request holds the key (the write lock keeps it so).
      const created = await engine.transaction((tx) => {
        if (key && tx.exec(shared.SQL.hold, key).rows.length === 0) return shared.CLAIM_LOST;
        const { version } = tx.exec<{ version: bigint }>(SQL.version).rows[0]!;
        // Not `{ ...plant, version }`: Node 20 makes such a copy slowly, in the old generation.
        const row = toRow(plant, version);
        if (tx.exec(SQL.insert, row).changes === 0) return false;
        tx.exec(SQL.created, row);
        for (const delivery of deliveries)
          tx.exec(SQL.enqueue, traceContext ? { ...delivery, traceContext } : delivery);
        if (endpointPayload !== undefined && subscribed(tx, 'plant.created'))
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
      // This engine's transactions are all SqliteTx.
      subscribed: (tx, event) => subscribed(tx as SqliteTx, event),
    }),
    list: (options) =>
      engine.read(() => {
        const { limit, after, maxBytes = PAGE_BUDGET_BYTES } = options;
        const from = shared.pageStart(after);
        if (from === undefined) return { plants: [], more: false };
        const filter = shared.filterOf(options) ?? 'all';
        const params = Object.assign({}, options, { from, limit, budget: SCAN_ROWS });
        if (filter === 'prefix' || filter === 'both') {
          const range = prefixRange(options.namePrefix!);
          const counted =
            range &&
            hitCount.get(...bind(PREFIX_PAGES.hitCount.sqlite, { ...range, hits: PREFIX_INDEX_ROWS + 1 }));
          const prefixPage = (page: Statement, values: Record<string, unknown>) =>
            byRow(prefixPages.get(page)!.iterate(...bind(page.sqlite, values)), rowOf, limit, maxBytes);
          if (counted !== undefined && counted <= PREFIX_INDEX_ROWS)
            return prefixPage(PREFIX_PAGES.hits, {
              ...range,
              from,
              tag: options.tag ?? null,
              limit: limit + 1,
            });
          const found = prefixPage(
            filter === 'both' ? PREFIX_PAGES.scanTag : PREFIX_PAGES.scan,
            Object.assign({}, params, { limit: limit + 1 }),
          );
          if (found.more) return found;
          const scan = scanned[filter].get(...bind(scans[filter].sqlite, params))!;
          return budgeted(found, { seen: Number(scan.seen), through: scan.through });
        }
        const page = pages.get(PAGES[filter])!;
        const args = bind(PAGES[filter].sqlite, Object.assign({}, params, { limit: limit + 1 }));
        const size = BYTES[filter];
        if (sizes.get(size)!.get(...bind(size.sqlite, params))! <= maxBytes) {
          const rows = page.all(...args);
          return {
            plants: rows.slice(0, limit).map((row) => toPlant(rowOf(row))),
            more: rows.length > limit,
          };
        }
        return byRow(page.iterate(...args), rowOf, limit, maxBytes);
      }),
  };
}

/** A page read row by row, stopping once its budget is spent. */
function byRow(
  rows: Iterable<unknown[]>,
  rowOf: (values: unknown[]) => PlantRow,
  limit: number,
  maxBytes: number,
) {
  const plants: PlantWithId[] = [];
  let bytes = 0;
  for (const values of rows) {
    const plant = toPlant(rowOf(values));
    bytes += textBytes(plant);
    if (plants.length === limit || (plants.length > 0 && bytes > maxBytes)) return { plants, more: true };
    plants.push(plant);
  }
  return { plants, more: false };
}
