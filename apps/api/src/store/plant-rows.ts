import { type PlantDeletedWebhook, type PlantUpdatedWebhook, stringifyJson } from '@plant-store/schema';
import { budgeted, candidates, PREFIX_INDEX_ROWS, prefixRange, SCAN_ROWS } from './filtered-pages.ts';
import { type Db, type Statement, statements, type Tx } from './sql.ts';
import {
  type ChangeOptions,
  type Expected,
  type KeyClaim,
  KeyClaimLostError,
  type ListOptions,
  PAGE_BUDGET_BYTES,
  type PlantStore,
} from './contract.ts';
import {
  applyChange,
  changeKey,
  FIELD_CHANGES,
  FIELD_BYTES,
  FIELD_COLUMNS,
  FIELD_PARAMS,
  PLANT_COLUMNS,
  type PlantRow,
  toPlant,
} from './plant-columns.ts';

export type Filter = 'tag' | 'prefix' | 'both';
export function filterOf({ tag, namePrefix }: ListOptions): Filter | undefined {
  if (tag === undefined) return namePrefix === undefined ? undefined : 'prefix';
  return namePrefix === undefined ? 'tag' : 'both';
}

export const TAG = 'tag = @tag';
// Compared exactly, code point by code point (no collation, no LIKE patterns), on both stores.
export const PREFIX = 'substr(name, 1, length(@namePrefix)) = @namePrefix';

/**
 * The plants (filtered) in id order from `@from`, at most `@limit` (a tag reads its index, plants_tag);
 * with a prefix, up to `@to` (the end of its scan budget, store/filtered-pages.ts).
 */
export const filtered = (filter?: Filter) => `SELECT ${PLANT_COLUMNS} FROM plants
  WHERE ${where(filter)} ORDER BY id LIMIT @limit`;
export const where = (filter?: Filter) =>
  `${filter ? `${WHERE[filter]} AND ` : ''}id >= @from${filter === 'prefix' || filter === 'both' ? ' AND id <= @to' : ''}`;
const WHERE: Record<Filter, string> = { tag: TAG, prefix: PREFIX, both: `${TAG} AND ${PREFIX}` };
/** How far `@budget` plants from `@from` reach, in id order (of the tag `@tag`, through its index). */
const scanned = (filter: 'prefix' | 'both') => `SELECT count(*) AS seen, max(id) AS through FROM (
    SELECT id FROM plants WHERE ${filter === 'both' ? `${TAG} AND ` : ''}id >= @from ORDER BY id LIMIT @budget) AS scanned`;

/** Of the `@limit` plants of `where`, those within `@maxBytes` (and the first); `candidates`: how many. */
const page = (where: string) => `SELECT ${PLANT_COLUMNS}, candidates FROM (
    SELECT ${PLANT_COLUMNS}, count(*) OVER () AS candidates, row_number() OVER running AS n,
      sum(${FIELD_BYTES}) OVER running AS bytes
    FROM (${where}) AS page
    WINDOW running AS (ORDER BY id ROWS UNBOUNDED PRECEDING)
  ) AS sized
  WHERE n = 1 OR bytes <= @maxBytes ORDER BY id`;

const SUBSCRIBED = "disabled_at IS NULL AND ',' || events || ',' LIKE '%,' || @event || ',%'";

export const SQL = statements('plants', {
  get: `SELECT ${PLANT_COLUMNS} FROM plants WHERE id = @id`,
  'page.all': page(filtered()),
  'page.tag': page(filtered('tag')),
  'page.prefix': page(filtered('prefix')),
  'page.both': page(filtered('both')),
  // The ids of (at most `@hits`) plants whose name is in `[@low, @high)`: a range of plants_name.
  hits: `SELECT id FROM plants WHERE name {code points} >= @low AND name {code points} < @high
    ORDER BY name {code points} LIMIT @hits`,
  'scanned.prefix': scanned('prefix'),
  'scanned.both': scanned('both'),
  // Holds (on PostgreSQL, locks) the key's row only while this request's claim has it.
  hold: `SELECT claim FROM idempotency_keys
    WHERE token_name = @tokenName AND key = @key AND claim = @claim AND status IS NULL {for update}`,
  answer:
    'UPDATE idempotency_keys SET status = @status, body = @body, version = @version WHERE token_name = @tokenName AND key = @key',
  // Locks the plant's row (PostgreSQL) before the events lock, the order creates and deletes take them in.
  lock: `SELECT ${PLANT_COLUMNS} FROM plants WHERE id = @id {for update}`,
  updated: `INSERT INTO plant_events (type, plant_id, ${FIELD_COLUMNS}, changed, created_at)
    VALUES ('plant.updated', @id, ${FIELD_PARAMS}, @changed, {now}) RETURNING id`,
  delete: 'DELETE FROM plants WHERE id = @id',
  deleted: "INSERT INTO plant_events (type, plant_id, created_at) VALUES ('plant.deleted', @id, {now})",
  // A delivery of `@payload` to each enabled endpoint that chose `@event`, as this transaction sees them.
  fanOut: `
    INSERT INTO webhook_deliveries (id, endpoint_id, url, event, payload, trace_context, next_attempt_at, created_at, updated_at)
    SELECT {delivery id}, id, url, @event, @payload, @traceContext, {now}, {now}, {now}
    FROM webhook_endpoints WHERE ${SUBSCRIBED}`,
  // Whether `fanOut` would enqueue anything.
  subscribed: `SELECT 1 AS subscribed FROM webhook_endpoints WHERE ${SUBSCRIBED} LIMIT 1`,
});

/** An update of the fields a key of `FIELD_CHANGES` names (and the version): those columns only. */
const SET = statements(
  'plants.set',
  Object.fromEntries(
    Object.entries(FIELD_CHANGES).map(([key, assignments]) => [
      key,
      `UPDATE plants SET ${assignments}, version = @version WHERE id = @id`,
    ]),
  ),
);

/** PostgreSQL's own: a rare prefix's page, its plants among `@ids`, through the primary key in id order. */
const POSTGRES = statements('postgres.plants', {
  'page.ids': page(`SELECT ${PLANT_COLUMNS} FROM plants
    WHERE id = ANY(CAST(@ids AS int8[])) AND (CAST(@tag AS text) IS NULL OR ${TAG}) AND ${PREFIX} ORDER BY id LIMIT @limit`),
});

export const getPlant = (db: Db) => (id: bigint) =>
  db.all<PlantRow>(SQL.get, { id }).then(([row]) => (row === undefined ? undefined : toPlant(row)));

/** A page of plants bounded by the server: PostgreSQL's `list`. */
export async function serverPage(db: Db, options: ListOptions) {
  const { limit, after, maxBytes = PAGE_BUDGET_BYTES } = options;
  const from = pageStart(after);
  if (from === undefined) return { plants: [], more: false };
  const filter = filterOf(options) ?? 'all';
  const params = Object.assign({}, options, { from, limit: limit + 1, maxBytes, to: 0n, budget: SCAN_ROWS });
  const read = async (statement: Statement) => {
    const rows = await db.all<PlantRow & { candidates: bigint }>(statement, params);
    const plants = rows.slice(0, limit).map(toPlant);
    return { plants, more: Number(rows[0]?.candidates ?? 0) > plants.length };
  };
  if (filter !== 'prefix' && filter !== 'both') return read(SQL[`page.${filter}`]);
  const range = prefixRange(options.namePrefix!);
  const hits = range && (await db.all<{ id: bigint }>(SQL.hits, { ...range, hits: PREFIX_INDEX_ROWS + 1 }));
  if (hits && hits.length <= PREFIX_INDEX_ROWS) {
    Object.assign(params, {
      ids: candidates(
        hits.map((hit) => hit.id),
        from,
      ),
      tag: options.tag ?? null,
    });
    return read(POSTGRES['page.ids']);
  }
  const [scan] = await db.all<{ seen: bigint; through: bigint | null }>(SQL[`scanned.${filter}`], params);
  params.to = scan!.through ?? from;
  return budgeted(await read(SQL[`page.${filter}`]), { seen: Number(scan!.seen), through: scan!.through });
}

const meets = (expected: Expected | undefined, version: bigint) =>
  expected === undefined || expected === 'any' || expected.includes(version);

/**
 * How an engine appends events; `lockEvents` is taken before drawing an event id, so ids commit in order.
 * `subscribed`, where the engine can answer it cheaply: whether an enabled endpoint chose `event`, as `tx`
 * sees the endpoints (without it, the fan-out statement finds out).
 */
export type ChangeEngine = Pick<Db, 'transaction'> & {
  lockEvents(tx: Tx): Promise<void>;
  subscribed?(tx: Tx, event: string): boolean;
};

/** What a keyed change's transaction answers when its request no longer holds the key. */
export const CLAIM_LOST = Symbol('claim lost');

/** Updates and deletes: the row is locked before checking `expected`, so a second change sees the first's. */
export function plantChanges({
  transaction,
  lockEvents,
  subscribed = () => true,
}: ChangeEngine): Pick<PlantStore, 'update' | 'delete'> {
  async function keyed<T>(key: KeyClaim | undefined, work: (tx: Tx) => Promise<T>): Promise<T> {
    const result = await transaction(async (tx) =>
      key && (await tx.run(SQL.hold, key)).rows.length === 0 ? CLAIM_LOST : work(tx),
    );
    if (result === CLAIM_LOST) throw new KeyClaimLostError();
    return result as T;
  }
  const lock = async (tx: Tx, id: bigint) => (await tx.run<PlantRow>(SQL.lock, { id })).rows[0];

  return {
    update: (change, { expected, key, traceContext }: ChangeOptions = {}) =>
      keyed(key, async (tx) => {
        const row = await lock(tx, change.id);
        if (row === undefined) return undefined;
        if (!meets(expected, row.version)) return { stale: row.version };
        // The whole change: every field of the table, so none is dropped on the way.
        const { next, changed } = applyChange(row, change);
        let plant = toPlant(row);
        if (changed.length > 0) {
          await lockEvents(tx);
          // Not `{ ...next, version }`: Node 20 makes such a copy slowly, in the old generation.
          const edit = Object.assign({}, next, { changed: changed.join(','), version: 0n });
          edit.version = (await tx.run<{ id: bigint }>(SQL.updated, edit)).rows[0]!.id;
          await tx.run(SET[changeKey(changed)]!, edit);
          plant = toPlant(edit);
          if (subscribed(tx, 'plant.updated')) {
            const body: PlantUpdatedWebhook = Object.assign({}, plant, { changed });
            await tx.run(SQL.fanOut, { event: 'plant.updated', payload: stringifyJson(body), traceContext });
          }
        }
        if (key) {
          const body = key.body === undefined ? stringifyJson(plant) : key.body;
          await tx.run(SQL.answer, Object.assign({}, key, { body, version: plant.version }));
        }
        return { plant, changed };
      }),
    delete: (id, { expected, key, traceContext }: ChangeOptions = {}) =>
      keyed(key, async (tx) => {
        const row = await lock(tx, id);
        if (row === undefined) return false;
        if (!meets(expected, row.version)) return { stale: row.version };
        await tx.run(SQL.delete, { id });
        await lockEvents(tx);
        await tx.run(SQL.deleted, { id });
        if (subscribed(tx, 'plant.deleted')) {
          const body: PlantDeletedWebhook = { id };
          await tx.run(SQL.fanOut, { event: 'plant.deleted', payload: stringifyJson(body), traceContext });
        }
        if (key) await tx.run(SQL.answer, Object.assign({}, key, { body: key.body ?? null, version: null }));
        return true;
      }),
  };
}

/** The lowest id a page after `after` can hold; `undefined` after the greatest possible id. */
export function pageStart(after: bigint | undefined): bigint | undefined {
  if (after === undefined) return -(2n ** 63n);
  return after < 2n ** 63n - 1n ? after + 1n : undefined;
}
