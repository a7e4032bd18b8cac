import type { NewPlant } from '@plant-store/schema';
import { groupCommit } from '../group-commit.ts';
import { FIELD_ARRAYS, FIELD_COLUMNS, fieldArrays, PLANT_COLUMNS } from '../plant-columns.ts';
import { plantChanges, serverPage } from '../plant-rows.ts';
import { statements } from '../sql.ts';
import {
  type CommitObserver,
  KeyClaimLostError,
  type NewDelivery,
  type PlantStore,
  StoreUnavailableError,
} from '../contract.ts';
import type { connect } from './connection.ts';

/** The channel every instance LISTENs on: a commit that appended events NOTIFYs it. */
export const EVENTS_CHANNEL = 'plant_store_events';

/** Held from drawing an event id to COMMIT, so ids commit in order (migration 5): an int8 nobody takes. */
const EVENTS_LOCK_KEY = '7234917730117002';

/**
 * Creates the plants of `@ids` and the field arrays (`fieldArrays`) where `guard` holds, each with its event (versions are
 * drawn after the events lock, in the join), deliveries and fan-out; an existing id adds nothing.
 */
const created = (guard: string) => `
  numbered AS (SELECT p.*, nextval(pg_get_serial_sequence('plant_events', 'id')) AS version
    FROM (SELECT * FROM unnest(@ids::int8[], ${FIELD_ARRAYS}) AS p (id, ${FIELD_COLUMNS})
      WHERE ${guard} ORDER BY id) AS p,
      (SELECT pg_advisory_xact_lock(${EVENTS_LOCK_KEY})) AS ordered),
  created AS (INSERT INTO plants (${PLANT_COLUMNS}) SELECT ${PLANT_COLUMNS} FROM numbered
    ON CONFLICT (id) DO NOTHING RETURNING ${PLANT_COLUMNS}),
  appended AS (INSERT INTO plant_events (id, type, plant_id, ${FIELD_COLUMNS}) OVERRIDING SYSTEM VALUE
    SELECT version, 'plant.created', id, ${FIELD_COLUMNS} FROM created RETURNING id),
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

/** One statement, one durable COMMIT; NOTIFYs only when a plant was created (an initplan runs per answer). */
const unkeyed = `
  WITH ${created('TRUE')}
  SELECT created.id, created.version, (SELECT pg_notify('${EVENTS_CHANNEL}', '')) AS notified FROM created`;

/**
 * A keyed create: `held` locks the key's row while `@claim` holds it, and only then is the plant made.
 * A concurrent takeover waits and finds the key completed, or commits first and nothing changes.
 */
const keyed = `
  WITH held AS (SELECT 1 FROM idempotency_keys
    WHERE token_name = @tokenName AND key = @key AND claim = @claim AND status IS NULL FOR UPDATE),
  ${created('EXISTS (SELECT 1 FROM held)')},
  answered AS (UPDATE idempotency_keys SET status = @status::integer, body = @body::text,
      version = (SELECT version FROM created)
    WHERE token_name = @tokenName AND key = @key AND EXISTS (SELECT 1 FROM created))
  SELECT (SELECT count(*) FROM held) AS held, (SELECT version FROM created) AS version,
    (SELECT pg_notify('${EVENTS_CHANNEL}', '') FROM appended LIMIT 1) AS notified`;

const SQL = statements('postgres.plants', {
  createBatch: unkeyed,
  createKeyed: keyed,
  // Only a transaction that appends events takes it, so only those NOTIFY (on COMMIT).
  lockEvents: `SELECT pg_advisory_xact_lock(${EVENTS_LOCK_KEY}), pg_notify('${EVENTS_CHANNEL}', '')`,
});

type PendingCreate = {
  plant: NewPlant;
  outbox: readonly NewDelivery[];
  endpointPayload?: string | undefined;
  traceContext?: string | undefined;
  resolve(version: bigint | false): void;
  reject(error: unknown): void;
};

const MAX_BATCH = 256;

/** The parameters of `created`, sorted by id so that concurrent batches lock rows in one order. */
function creations(creates: readonly Omit<PendingCreate, 'resolve' | 'reject'>[]) {
  const plants = creates.map((entry) => entry.plant).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const deliveries = creates.flatMap(({ plant, outbox }) =>
    outbox.map((delivery) => Object.assign({}, delivery, { plantId: plant.id })),
  );
  const fanning = creates.filter((entry) => entry.endpointPayload !== undefined);
  return {
    ids: plants.map((plant) => plant.id),
    ...fieldArrays(plants),
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

/** The PostgreSQL store's plant writes: creates group-committed, a statement a batch; keyed ones alone. */
export function postgresPlants(
  connection: ReturnType<typeof connect>,
  poolSize: number,
  observer?: CommitObserver,
): Pick<PlantStore, 'create' | 'update' | 'delete' | 'list'> {
  const { exec, call, db } = connection;
  const insert = async (batch: readonly PendingCreate[]) => {
    const { rows } = await exec<{ id: bigint; version: string }>(SQL.createBatch, creations(batch));
    return new Map(rows.map((row) => [row.id, BigInt(row.version)]));
  };
  const versionOf = (inserted: Map<bigint, bigint>, id: bigint) => inserted.get(id) ?? false;

  const creates = groupCommit<PendingCreate>(
    async (batch) => {
      // An id twice in one statement would be answered inserted twice: only its first create goes.
      const firsts = new Map<bigint, PendingCreate>();
      for (const entry of batch) if (!firsts.has(entry.plant.id)) firsts.set(entry.plant.id, entry);
      try {
        const inserted = await insert([...firsts.values()]);
        for (const entry of batch)
          entry.resolve(firsts.get(entry.plant.id) === entry && versionOf(inserted, entry.plant.id));
      } catch (error) {
        if (batch.length === 1 || error instanceof StoreUnavailableError)
          for (const entry of batch) entry.reject(error);
        // The server refused a plant: each goes again alone, so only that one fails.
        else
          await Promise.all(
            batch.map((entry) =>
              insert([entry]).then((ids) => entry.resolve(versionOf(ids, entry.plant.id)), entry.reject),
            ),
          );
        // The batch's span says its statement failed, whatever became of its creates.
        throw error;
      }
    },
    { system: 'postgresql', concurrency: poolSize, max: MAX_BATCH, observer },
  );

  return {
    create(plant, { outbox = {}, key, traceContext } = {}) {
      const { deliveries: outboxRows = [], endpointPayload } = outbox;
      return call(async () => {
        if (!key)
          return new Promise<bigint | false>((resolve, reject) => {
            const entry: PendingCreate = { plant, outbox: outboxRows, endpointPayload, resolve, reject };
            if (traceContext) entry.traceContext = traceContext;
            creates.push(entry);
          });
        const params = {
          ...key,
          body: key.body ?? null,
          ...creations([{ plant, outbox: outboxRows, endpointPayload, traceContext }]),
        };
        const [row] = (await exec<{ held: string; version: string | null }>(SQL.createKeyed, params)).rows;
        if (Number(row!.held) === 0) throw new KeyClaimLostError();
        return row!.version === null ? false : BigInt(row!.version);
      });
    },
    ...plantChanges({
      transaction: db.transaction,
      lockEvents: async (tx) => void (await tx.run(SQL.lockEvents)),
    }),
    list: (options) => call(() => serverPage(db, options)),
  };
}
