import type { NewPlant } from '@plant-store/schema';
import { currentTraceparent } from '../../tracing/commit.ts';
import { groupCommit } from '../group-commit.ts';
import { type PlantRow, pageStart, toPlant } from '../plants.ts';
import { type Params, type Statement, statements } from '../sql.ts';
import {
  KeyClaimLostError,
  type NewDelivery,
  PAGE_BUDGET_BYTES,
  type PlantStore,
  type StoredEvent,
  StoreUnavailableError,
} from '../store.ts';
import type { connect } from './connection.ts';

/** The channel every instance LISTENs on: a commit that appended events NOTIFYs it. */
export const EVENTS_CHANNEL = 'plant_store_events';

/**
 * The transaction-scoped advisory lock an event's writer holds from drawing its id to its COMMIT, so
 * that event ids commit in order (see migration 5): any fixed int8 no other application takes.
 */
const EVENTS_LOCK_KEY = '7234917730117002';

/**
 * Appends an event for each row of `changed` (in id order), under the events lock taken in the join
 * before any id is drawn.
 */
const appended = (type: StoredEvent['type'], changed: string) => `
  appended AS (INSERT INTO plant_events (type, plant_id, name, tag)
    SELECT '${type}', changed.id, changed.name, changed.tag FROM (SELECT * FROM ${changed} ORDER BY id) AS changed,
      (SELECT pg_advisory_xact_lock(${EVENTS_LOCK_KEY})) AS ordered
    RETURNING id)`;

/**
 * Creates the plants of `@ids`, `@names`, `@tags` (one array per column: unnest zips them back into
 * rows) where `guard` holds; a plant whose id exists inserts, appends and enqueues nothing. With each
 * plant inserted go its deliveries (`@deliveryPlants` … `@payloads`) and, if it is among `@fanning`,
 * one `plant.created` delivery of its endpoint payload to every enabled endpoint: the endpoints as
 * this statement sees the table (one disabled while this runs may still get one: the worker fails it).
 */
const created = (guard: string) => `
  created AS (INSERT INTO plants (id, name, tag)
    SELECT * FROM unnest(@ids::int8[], @names::text[], @tags::text[]) WHERE ${guard}
    ON CONFLICT (id) DO NOTHING RETURNING id, name, tag),
  enqueued AS (INSERT INTO webhook_deliveries (id, url, payload, trace_context)
    SELECT delivery.id, delivery.url, delivery.payload, delivery.trace_context
    FROM unnest(@deliveryPlants::int8[], @deliveryIds::text[], @urls::text[], @payloads::text[], @deliveryTraces::text[])
      AS delivery (plant_id, id, url, payload, trace_context)
    JOIN created ON created.id = delivery.plant_id),
  fanned_out AS (INSERT INTO webhook_deliveries (id, endpoint_id, url, event, payload, trace_context)
    SELECT 'msg_' || replace(gen_random_uuid()::text, '-', ''), endpoint.id, endpoint.url, 'plant.created', p.payload, p.trace_context
    FROM unnest(@fanning::int8[], @endpointPayloads::text[], @fanningTraces::text[]) AS p (plant_id, payload, trace_context)
    JOIN created ON created.id = p.plant_id CROSS JOIN webhook_endpoints AS endpoint
    WHERE endpoint.disabled_at IS NULL)`;
const deleted = (guard: string) => `
  deleted AS (DELETE FROM plants WHERE id = @id AND ${guard} RETURNING id, NULL::text AS name, NULL::text AS tag)`;

/**
 * A change with its events in one statement, so one transaction and one durable COMMIT: it answers
 * the ids changed, and NOTIFYs the listeners once, at COMMIT, only when a row changed (an initplan
 * runs only when a row is answered).
 */
const unkeyed = (type: StoredEvent['type'], change: string, changed: string) => `
  WITH ${change}, ${appended(type, changed)}
  SELECT ${changed}.id, (SELECT pg_notify('${EVENTS_CHANNEL}', '')) AS notified FROM ${changed}`;

/**
 * A change carrying an Idempotency-Key, in one statement (so one transaction): `held` locks the
 * key's row while this request holds it (`@claim`), the change is made only then, and its answer
 * (`@status`, `@body`) is stored only when it was made. A claim taking the key over concurrently
 * either waits for this statement and then finds the key completed, or commits first, and then
 * `held` re-reads the row, finds another claim and nothing changes.
 */
const keyed = (type: StoredEvent['type'], change: (guard: string) => string, changed: string) => `
  WITH held AS (SELECT 1 FROM idempotency_keys
    WHERE token_name = @tokenName AND key = @key AND claim = @claim AND status IS NULL FOR UPDATE),
  ${change('EXISTS (SELECT 1 FROM held)')},
  answered AS (UPDATE idempotency_keys SET status = @status::integer, body = @body::text
    WHERE token_name = @tokenName AND key = @key AND EXISTS (SELECT 1 FROM ${changed})),
  ${appended(type, changed)}
  SELECT (SELECT count(*) FROM held) AS held, (SELECT count(*) FROM ${changed}) AS changed,
    (SELECT pg_notify('${EVENTS_CHANNEL}', '') FROM appended LIMIT 1) AS notified`;

const SQL = statements('postgres.plants', {
  createBatch: unkeyed('plant.created', created('TRUE'), 'created'),
  createKeyed: keyed('plant.created', created, 'created'),
  delete: unkeyed('plant.deleted', deleted('TRUE'), 'deleted'),
  deleteKeyed: keyed('plant.deleted', deleted, 'deleted'),
  /**
   * A page of `list`, bounded by the server: of the first `@limit` plants from `@from`, only those
   * whose running total of name and tag bytes stays within `@maxBytes` (and always the first) are
   * sent, so the process never receives more than the budget (or the first row, when it alone is
   * larger). `candidates` says how many there were, so the caller knows whether the budget cut the
   * page. octet_length reads the stored size without decompressing the text.
   */
  list: `SELECT id, name, tag, candidates FROM (
      SELECT id, name, tag, count(*) OVER () AS candidates, row_number() OVER running AS n,
        sum(octet_length(name) + coalesce(octet_length(tag), 0)) OVER running AS bytes
      FROM (SELECT id, name, tag FROM plants WHERE id >= @from ORDER BY id LIMIT @limit) AS page
      WINDOW running AS (ORDER BY id ROWS UNBOUNDED PRECEDING)
    ) AS sized
    WHERE n = 1 OR bytes <= @maxBytes ORDER BY id`,
});

/** A create waiting for its batch. */
type PendingCreate = {
  plant: NewPlant;
  outbox: readonly NewDelivery[];
  endpointPayload?: string | undefined;
  /** The create's `traceparent`, only when it was traced (`currentTraceparent`). */
  traceContext?: string | undefined;
  resolve(inserted: boolean): void;
  reject(error: unknown): void;
};

/** Most creates one batch carries; more wait for the next batch. */
const MAX_BATCH = 256;

/** The parameters of `created` for these creates. Sorted by id, so concurrent batches take row locks in one order (no deadlock). */
function creations(creates: readonly Omit<PendingCreate, 'resolve' | 'reject'>[]) {
  const plants = creates.map((entry) => entry.plant).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const deliveries = creates.flatMap(({ plant, outbox }) =>
    outbox.map((delivery) => ({ ...delivery, plantId: plant.id })),
  );
  const fanning = creates.filter((entry) => entry.endpointPayload !== undefined);
  return {
    ids: plants.map((plant) => plant.id),
    names: plants.map((plant) => plant.name),
    tags: plants.map((plant) => plant.tag ?? null),
    deliveryPlants: deliveries.map((delivery) => delivery.plantId),
    deliveryIds: deliveries.map((delivery) => delivery.id),
    urls: deliveries.map((delivery) => delivery.url),
    payloads: deliveries.map((delivery) => delivery.payload),
    fanning: fanning.map((entry) => entry.plant.id),
    endpointPayloads: fanning.map((entry) => entry.endpointPayload),
    // Untraced, none: unnest reads the NULL arrays as NULL in every row.
    ...(creates.some((entry) => entry.traceContext) && {
      deliveryTraces: creates.flatMap(({ outbox, traceContext }) => outbox.map(() => traceContext)),
      fanningTraces: fanning.map((entry) => entry.traceContext),
    }),
  };
}

/**
 * The PostgreSQL store's plant writes and pages. Creates are group-committed (group-commit.ts), one
 * `createBatch` statement a batch; a keyed create or delete goes on its own, its statement checking
 * and completing its key.
 */
export function postgresPlants(
  { exec, call }: ReturnType<typeof connect>,
  poolSize: number,
): Pick<PlantStore, 'create' | 'delete' | 'list'> {
  /** Rejects with `KeyClaimLostError`, having changed nothing, when the request no longer holds the key. */
  async function keyedChange(statement: Statement, params: Params): Promise<boolean> {
    const { rows } = await exec<{ held: bigint; changed: bigint }>(statement, params);
    if (Number(rows[0]!.held) === 0) throw new KeyClaimLostError();
    return Number(rows[0]!.changed) === 1;
  }

  /** The ids of the plants `batch` inserted. */
  const insert = async (batch: readonly PendingCreate[]) =>
    new Set((await exec<{ id: bigint }>(SQL.createBatch, creations(batch))).rows.map((row) => row.id));

  const creates = groupCommit<PendingCreate>(
    async (batch) => {
      // Each create is answered on its own: true when its plant was inserted, false when the id
      // existed. One statement would answer an id it holds twice as inserted twice: it carries each
      // id's first create, and the others are answered false (the id exists once it commits).
      const firsts = new Map<bigint, PendingCreate>();
      for (const entry of batch) if (!firsts.has(entry.plant.id)) firsts.set(entry.plant.id, entry);
      try {
        const inserted = await insert([...firsts.values()]);
        for (const entry of batch)
          entry.resolve(firsts.get(entry.plant.id) === entry && inserted.has(entry.plant.id));
      } catch (error) {
        if (batch.length === 1 || error instanceof StoreUnavailableError)
          for (const entry of batch) entry.reject(error);
        // The server refused one of the plants: each goes again on its own, so only that one fails.
        else
          await Promise.all(
            batch.map((entry) =>
              insert([entry]).then((inserted) => entry.resolve(inserted.has(entry.plant.id)), entry.reject),
            ),
          );
        // The batch's own statement failed (its span says so), whatever became of its creates.
        throw error;
      }
    },
    { system: 'postgresql', concurrency: poolSize, max: MAX_BATCH },
  );

  return {
    create(plant, outbox = [], answer, endpointPayload) {
      const traceContext = currentTraceparent();
      return call(() =>
        answer
          ? keyedChange(SQL.createKeyed, {
              ...answer,
              ...creations([{ plant, outbox, endpointPayload, traceContext }]),
            })
          : new Promise<boolean>((resolve, reject) => {
              const entry: PendingCreate = { plant, outbox, endpointPayload, resolve, reject };
              if (traceContext) entry.traceContext = traceContext;
              creates.push(entry);
            }),
      );
    },
    delete: (id, answer) =>
      call(async () =>
        answer
          ? keyedChange(SQL.deleteKeyed, { ...answer, id })
          : (await exec(SQL.delete, { id })).changes === 1,
      ),
    list: ({ limit, after, maxBytes = PAGE_BUDGET_BYTES }) =>
      call(async () => {
        const from = pageStart(after);
        if (from === undefined) return { plants: [], more: false };
        const page = await exec<PlantRow & { candidates: bigint }>(SQL.list, {
          from,
          limit: limit + 1,
          maxBytes,
        });
        const plants = page.rows.slice(0, limit).map(toPlant);
        return { plants, more: Number(page.rows[0]?.candidates ?? 0) > plants.length };
      }),
  };
}
