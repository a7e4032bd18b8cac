import type { NewPlant } from '@plant-store/schema';
import { currentTraceparent } from '../../tracing/commit.ts';
import { groupCommit } from '../group-commit.ts';
import { plantChanges, serverPage } from '../plants.ts';
import { statements } from '../sql.ts';
import { KeyClaimLostError, type NewDelivery, type PlantStore, StoreUnavailableError } from '../store.ts';
import type { connect } from './connection.ts';

/** The channel every instance LISTENs on: a commit that appended events NOTIFYs it. */
export const EVENTS_CHANNEL = 'plant_store_events';

/**
 * The transaction-scoped advisory lock an event's writer holds from drawing its id to its COMMIT, so
 * that event ids commit in order (see migration 5): any fixed int8 no other application takes.
 */
const EVENTS_LOCK_KEY = '7234917730117002';

/**
 * Creates the plants of `@ids`, `@names`, `@tags` (one array per column: unnest zips them back into
 * rows) where `guard` holds; a plant whose id exists inserts, appends and enqueues nothing. Each
 * plant's version is its event's id, drawn from the event log's sequence under the events lock,
 * taken in the join before any id is drawn. With each plant inserted go its `plant.created` event,
 * its deliveries (`@deliveryPlants` … `@payloads`) and, if it is among `@fanning`, one delivery of
 * its endpoint payload to every enabled endpoint that chose `plant.created`: the endpoints as this
 * statement sees the table (one disabled while this runs may still get one: the worker fails it).
 */
const created = (guard: string) => `
  numbered AS (SELECT p.id, p.name, p.tag, nextval(pg_get_serial_sequence('plant_events', 'id')) AS version
    FROM (SELECT * FROM unnest(@ids::int8[], @names::text[], @tags::text[]) AS p (id, name, tag)
      WHERE ${guard} ORDER BY id) AS p,
      (SELECT pg_advisory_xact_lock(${EVENTS_LOCK_KEY})) AS ordered),
  created AS (INSERT INTO plants (id, name, tag, version) SELECT id, name, tag, version FROM numbered
    ON CONFLICT (id) DO NOTHING RETURNING id, name, tag, version),
  appended AS (INSERT INTO plant_events (id, type, plant_id, name, tag) OVERRIDING SYSTEM VALUE
    SELECT version, 'plant.created', id, name, tag FROM created RETURNING id),
  enqueued AS (INSERT INTO webhook_deliveries (id, url, payload, trace_context)
    SELECT delivery.id, delivery.url, delivery.payload, delivery.trace_context
    FROM unnest(@deliveryPlants::int8[], @deliveryIds::text[], @urls::text[], @payloads::text[], @deliveryTraces::text[])
      AS delivery (plant_id, id, url, payload, trace_context)
    JOIN created ON created.id = delivery.plant_id),
  fanned_out AS (INSERT INTO webhook_deliveries (id, endpoint_id, url, event, payload, trace_context)
    SELECT {delivery id}, endpoint.id, endpoint.url, 'plant.created', p.payload, p.trace_context
    FROM unnest(@fanning::int8[], @endpointPayloads::text[], @fanningTraces::text[]) AS p (plant_id, payload, trace_context)
    JOIN created ON created.id = p.plant_id CROSS JOIN webhook_endpoints AS endpoint
    WHERE endpoint.disabled_at IS NULL AND ',' || endpoint.events || ',' LIKE '%,plant.created,%')`;

/**
 * Creates with their events in one statement, so one transaction and one durable COMMIT: it answers
 * the ids created with their versions, and NOTIFYs the listeners once, at COMMIT, only when a plant
 * was created (an initplan runs only when a row is answered).
 */
const unkeyed = `
  WITH ${created('TRUE')}
  SELECT created.id, created.version, (SELECT pg_notify('${EVENTS_CHANNEL}', '')) AS notified FROM created`;

/**
 * A create carrying an Idempotency-Key, in one statement (so one transaction): `held` locks the
 * key's row while this request holds it (`@claim`), the create is made only then, and its answer
 * (`@status`, `@body`) is stored only when it was made. A claim taking the key over concurrently
 * either waits for this statement and then finds the key completed, or commits first, and then
 * `held` re-reads the row, finds another claim and nothing changes.
 */
const keyed = `
  WITH held AS (SELECT 1 FROM idempotency_keys
    WHERE token_name = @tokenName AND key = @key AND claim = @claim AND status IS NULL FOR UPDATE),
  ${created('EXISTS (SELECT 1 FROM held)')},
  answered AS (UPDATE idempotency_keys SET status = @status::integer, body = @body::text
    WHERE token_name = @tokenName AND key = @key AND EXISTS (SELECT 1 FROM created))
  SELECT (SELECT count(*) FROM held) AS held, (SELECT version FROM created) AS version,
    (SELECT pg_notify('${EVENTS_CHANNEL}', '') FROM appended LIMIT 1) AS notified`;

const SQL = statements('postgres.plants', {
  createBatch: unkeyed,
  createKeyed: keyed,
  lockEvents: `SELECT pg_advisory_xact_lock(${EVENTS_LOCK_KEY})`,
  notify: `SELECT pg_notify('${EVENTS_CHANNEL}', '')`,
});

/** A create waiting for its batch. */
type PendingCreate = {
  plant: NewPlant;
  outbox: readonly NewDelivery[];
  endpointPayload?: string | undefined;
  /** The create's `traceparent`, only when it was traced (`currentTraceparent`). */
  traceContext?: string | undefined;
  /** Its version, or `false` when the id existed. */
  resolve(version: bigint | false): void;
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
 * `createBatch` statement a batch; a keyed create goes on its own, its statement checking and
 * completing its key. Updates and deletes are the shared ones (plants.ts), under the events lock.
 */
export function postgresPlants(
  connection: ReturnType<typeof connect>,
  poolSize: number,
): Pick<PlantStore, 'create' | 'update' | 'delete' | 'list'> {
  const { exec, call, db } = connection;
  /** The versions of the plants `batch` inserted, by id. */
  const insert = async (batch: readonly PendingCreate[]) =>
    new Map(
      (await exec<{ id: bigint; version: string }>(SQL.createBatch, creations(batch))).rows.map((row) => [
        row.id,
        BigInt(row.version),
      ]),
    );
  const versionOf = (inserted: Map<bigint, bigint>, id: bigint) => inserted.get(id) ?? false;

  const creates = groupCommit<PendingCreate>(
    async (batch) => {
      // Each create is answered on its own: its version when its plant was inserted, false when the
      // id existed. One statement would answer an id it holds twice as inserted twice: it carries
      // each id's first create, and the others are answered false (the id exists once it commits).
      const firsts = new Map<bigint, PendingCreate>();
      for (const entry of batch) if (!firsts.has(entry.plant.id)) firsts.set(entry.plant.id, entry);
      try {
        const inserted = await insert([...firsts.values()]);
        for (const entry of batch)
          entry.resolve(firsts.get(entry.plant.id) === entry && versionOf(inserted, entry.plant.id));
      } catch (error) {
        if (batch.length === 1 || error instanceof StoreUnavailableError)
          for (const entry of batch) entry.reject(error);
        // The server refused one of the plants: each goes again on its own, so only that one fails.
        else
          await Promise.all(
            batch.map((entry) =>
              insert([entry]).then(
                (inserted) => entry.resolve(versionOf(inserted, entry.plant.id)),
                entry.reject,
              ),
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
      return call(async () => {
        if (!answer)
          return new Promise<bigint | false>((resolve, reject) => {
            const entry: PendingCreate = { plant, outbox, endpointPayload, resolve, reject };
            if (traceContext) entry.traceContext = traceContext;
            creates.push(entry);
          });
        // Rejects with `KeyClaimLostError`, having changed nothing, when the request no longer holds the key.
        const params = { ...answer, ...creations([{ plant, outbox, endpointPayload, traceContext }]) };
        const [row] = (await exec<{ held: string; version: string | null }>(SQL.createKeyed, params)).rows;
        if (Number(row!.held) === 0) throw new KeyClaimLostError();
        return row!.version === null ? false : BigInt(row!.version);
      });
    },
    ...plantChanges({
      transaction: (work) =>
        db.transaction(async (tx) => {
          const done = await work(tx);
          await tx.run(SQL.notify);
          return done;
        }),
      lockEvents: async (tx) => void (await tx.run(SQL.lockEvents)),
    }),
    list: (options) => call(() => serverPage(db, options)),
  };
}
