import type { NewPlant } from '@plant-store/schema';
import pg from 'pg';
import { type MigrateOptions, type MigrationResult, migrate } from './migrate.ts';
import { listen } from './postgres/listen.ts';
import * as fromRow from './rows.ts';
import {
  type ClaimOutcome,
  type DeliveryOutbox,
  type EventLog,
  type IdempotencyKeyStore,
  KeyClaimLostError,
  type KeyedAnswer,
  type NewDelivery,
  PAGE_BUDGET_BYTES,
  type PlantStore,
  type StoredEvent,
  StoreUnavailableError,
  type TokenStore,
  type WebhookEndpointStore,
} from './store.ts';

export type PostgresStoreOptions = {
  /** A `postgres://` or `postgresql://` connection URL. */
  url: string;
  /** Most connections the pool opens. */
  poolSize: number;
  /**
   * Bound on one store call, in milliseconds: waiting for a pooled connection, connecting, and the
   * statement together. Past it the call fails with `StoreUnavailableError`.
   */
  timeoutMs: number;
};

type PageRow = fromRow.PlantRow & { candidates: bigint };
type PendingCreate = {
  plant: NewPlant;
  outbox: readonly NewDelivery[];
  endpointPayload: string | undefined;
  resolve(inserted: boolean): void;
  reject(error: unknown): void;
};

/** The channel every instance LISTENs on: a commit that appended events NOTIFYs it. */
export const EVENTS_CHANNEL = 'plant_store_events';

/**
 * The transaction-scoped advisory lock an event's writer holds from drawing its id to its COMMIT, so
 * that event ids commit in order (see migration 5): any fixed int8 no other application takes.
 */
const EVENTS_LOCK_KEY = '7234917730117002';

/**
 * Appends an event for each row of `changed` (in id order), under the events lock taken in the
 * join before any id is drawn. The statement's answer NOTIFYs the listeners once, at COMMIT, and
 * only when a row changed (an initplan runs only when a row is answered).
 */
function appendEvents(type: StoredEvent['type'], changed: string): string {
  return `
  appended AS (
    INSERT INTO plant_events (type, plant_id, name, tag)
    SELECT '${type}', changed.id, changed.name, changed.tag
    FROM (SELECT * FROM ${changed} ORDER BY id) AS changed, (SELECT pg_advisory_xact_lock(${EVENTS_LOCK_KEY})) AS ordered
    RETURNING id
  )
  SELECT ${changed}.id, (SELECT pg_notify('${EVENTS_CHANNEL}', '')) AS notified FROM ${changed}`;
}

/**
 * One `plant.created` delivery per enabled endpoint for each row of `created` that has a payload
 * in `payloads` (a FROM item `p` of `plant_id, payload`): the endpoints as this statement sees the
 * table. An endpoint disabled while this runs may still get one: the worker fails it (see `disable`).
 */
function fanOut(payloads: string): string {
  return `
  fanned_out AS (
    INSERT INTO webhook_deliveries (id, endpoint_id, url, event, payload)
    SELECT 'msg_' || replace(gen_random_uuid()::text, '-', ''), endpoint.id, endpoint.url, 'plant.created', p.payload
    FROM ${payloads} JOIN created ON created.id = p.plant_id CROSS JOIN webhook_endpoints AS endpoint
    WHERE endpoint.disabled_at IS NULL
  )`;
}

/**
 * Group commit: the creates of one batch (see `openPostgresStore`) in one statement, so one
 * transaction and one durable COMMIT: the plants, their events and their deliveries together.
 * `$1`–`$3` are the plants' ids, names and tags, one array per column (unnest zips them back into
 * rows); `$4`–`$7` the deliveries' plant ids, ids, URLs and payloads; `$8`–`$9` the plants' ids and
 * endpoint payloads (see `fanOut`). A plant whose id exists inserts, appends and enqueues nothing;
 * the ids answered are the plants inserted. Ids come sorted, so concurrent batches take row locks in
 * one order (no deadlock).
 */
const CREATE_BATCH = `
  WITH created AS (
    INSERT INTO plants (id, name, tag)
    SELECT plant.id, plant.name, plant.tag FROM unnest($1::int8[], $2::text[], $3::text[]) AS plant (id, name, tag)
    ON CONFLICT (id) DO NOTHING
    RETURNING id, name, tag
  ), enqueued AS (
    INSERT INTO webhook_deliveries (id, url, payload)
    SELECT delivery.id, delivery.url, delivery.payload
    FROM unnest($4::int8[], $5::text[], $6::text[], $7::text[]) AS delivery (plant_id, id, url, payload)
    JOIN created ON created.id = delivery.plant_id
  ),
  ${fanOut('unnest($8::int8[], $9::text[]) AS p (plant_id, payload)')},
  ${appendEvents('plant.created', 'created')}`;

/** Most creates one batch carries; more wait for the next batch. */
const MAX_BATCH = 256;

/** The deletion and its event in one statement; one row when the plant existed. */
const DELETE = `
  WITH deleted AS (
    DELETE FROM plants WHERE id = $1 RETURNING id, NULL::text AS name, NULL::text AS tag
  ),
  ${appendEvents('plant.deleted', 'deleted')}`;

/** Oldest first, at most `$2` events; records the greatest id pruned in the same statement. */
const PRUNE_EVENTS = `
  WITH gone AS (
    DELETE FROM plant_events WHERE id IN (
      SELECT id FROM plant_events
      WHERE created_at < now() - $1::bigint * interval '1 millisecond'
      ORDER BY id
      LIMIT $2
      FOR UPDATE SKIP LOCKED
    )
    RETURNING id
  ),
  recorded AS (
    UPDATE event_log SET pruned_through = GREATEST(pruned_through, (SELECT max(id) FROM gone))
    WHERE id = 1 AND EXISTS (SELECT 1 FROM gone)
  )
  SELECT count(*) AS n FROM gone`;

/**
 * SKIP LOCKED passes over rows another claim is taking right now; pushing `next_attempt_at` to the
 * lease's end hides them from later claims until then. Times come from the server's clock, which
 * every instance shares.
 */
function claimOf(where: string): string {
  return `
  UPDATE webhook_deliveries
  SET attempts = attempts + 1, next_attempt_at = now() + $3::bigint * interval '1 millisecond', updated_at = now()
  WHERE id IN (
    SELECT id FROM webhook_deliveries
    WHERE status = 'pending' AND ${where} AND next_attempt_at <= now()
    ORDER BY next_attempt_at
    LIMIT $2
    FOR UPDATE SKIP LOCKED
  )
  RETURNING id, url, payload, attempts, created_at, endpoint_id, event`;
}
/** `$1` the operator URL. */
const CLAIM = claimOf('endpoint_id IS NULL AND url = $1');
/** `$1` the endpoint's id. */
const CLAIM_FOR_ENDPOINT = claimOf('endpoint_id = $1');

/** Claims handed back unattempted: `$1` their ids, `$2` the attempts each claim returned. */
const RELEASE = `
  UPDATE webhook_deliveries AS d
  SET attempts = d.attempts - 1, next_attempt_at = now(), updated_at = now()
  FROM unnest($1::text[], $2::int[]) AS claim (id, attempts)
  WHERE d.id = claim.id AND d.attempts = claim.attempts AND d.status = 'pending'`;

/**
 * The distinct URLs with pending deliveries, by a loose index scan: one probe of
 * webhook_deliveries_due_by_url per URL, however many deliveries each has.
 */
const PENDING_URLS = `
  WITH RECURSIVE urls (url) AS (
    SELECT min(url) FROM webhook_deliveries WHERE status = 'pending' AND endpoint_id IS NULL
    UNION ALL
    SELECT (SELECT min(url) FROM webhook_deliveries WHERE status = 'pending' AND endpoint_id IS NULL AND url > urls.url)
    FROM urls WHERE urls.url IS NOT NULL
  )
  SELECT url FROM urls WHERE url IS NOT NULL LIMIT $1`;

/** The same over webhook_deliveries_due_by_endpoint: the endpoints with pending deliveries. */
const PENDING_ENDPOINTS = `
  WITH RECURSIVE endpoints (id) AS (
    SELECT min(endpoint_id) FROM webhook_deliveries WHERE status = 'pending' AND endpoint_id IS NOT NULL
    UNION ALL
    SELECT (SELECT min(endpoint_id) FROM webhook_deliveries
            WHERE status = 'pending' AND endpoint_id IS NOT NULL AND endpoint_id > endpoints.id)
    FROM endpoints WHERE endpoints.id IS NOT NULL
  )
  SELECT id FROM endpoints WHERE id IS NOT NULL LIMIT $1`;

/** Each count walks at most `$1` entries of its partial index (pending: of each of the two). */
const DEPTH = `
  SELECT
    LEAST($1,
      (SELECT count(*) FROM (SELECT 1 FROM webhook_deliveries WHERE status = 'pending' AND endpoint_id IS NULL ORDER BY url, next_attempt_at LIMIT $1) AS p)
      + (SELECT count(*) FROM (SELECT 1 FROM webhook_deliveries WHERE status = 'pending' AND endpoint_id IS NOT NULL ORDER BY endpoint_id, next_attempt_at LIMIT $1) AS e)) AS pending,
    (SELECT count(*) FROM (SELECT 1 FROM webhook_deliveries WHERE status = 'failed' ORDER BY created_at LIMIT $1) AS f) AS failed`;

/** Oldest first, at most `$2` rows; rows another instance is pruning right now are left to it. */
const PRUNE = `
  DELETE FROM webhook_deliveries WHERE id IN (
    SELECT id FROM webhook_deliveries
    WHERE status = 'delivered' AND updated_at < now() - $1::bigint * interval '1 millisecond'
    ORDER BY updated_at
    LIMIT $2
    FOR UPDATE SKIP LOCKED
  )`;

/** The same for failed deliveries, by the time they failed (see migration 9). */
const PRUNE_FAILED = `
  DELETE FROM webhook_deliveries WHERE id IN (
    SELECT id FROM webhook_deliveries
    WHERE status = 'failed' AND updated_at < now() - $1::bigint * interval '1 millisecond'
    ORDER BY updated_at
    LIMIT $2
    FOR UPDATE SKIP LOCKED
  )`;

/**
 * Whether endpoint `$1` has fewer than `$2` pending deliveries: reads at most `$2` entries of
 * webhook_deliveries_due_by_endpoint. Run holding `PENDING_LOCK_KEY` for the endpoint, in a
 * statement after the lock's, so that its snapshot sees every change committed before it.
 */
const HAS_ROOM = `
  (SELECT count(*) FROM (SELECT 1 FROM webhook_deliveries WHERE endpoint_id = $1 AND status = 'pending' LIMIT $2) AS p) < $2`;

/**
 * The advisory lock a ping or a redelivery holds while it counts an endpoint's pending deliveries
 * and adds one, so concurrent ones (on any instance) never pass WEBHOOK_PENDING_PER_ENDPOINT
 * together: any fixed int4 no other application takes, with the endpoint id's hash as the second key.
 * Creates' fan-out neither takes it nor is capped.
 */
const PENDING_LOCK_KEY = 723491774;

/**
 * A page of `list`, bounded by the server: of the first `$1` plants matching `where`, only those
 * whose running total of name and tag bytes stays within `$2` (and always the first) are sent, so
 * the process never receives more than the budget (or the first row, when it alone is larger).
 * `candidates` says how many matched, so the caller knows whether the budget cut the page.
 * octet_length reads the stored size without decompressing the text.
 */
function pageQuery(where: string): string {
  return `
    SELECT id, name, tag, candidates FROM (
      SELECT id, name, tag,
        count(*) OVER () AS candidates,
        row_number() OVER running AS n,
        sum(octet_length(name) + coalesce(octet_length(tag), 0)) OVER running AS bytes
      FROM (SELECT id, name, tag FROM plants WHERE ${where} ORDER BY id LIMIT $1) AS page
      WINDOW running AS (ORDER BY id ROWS UNBOUNDED PRECEDING)
    ) AS sized
    WHERE n = 1 OR bytes <= $2
    ORDER BY id`;
}

/**
 * Takes an Idempotency-Key (see `IdempotencyKeyStore.claim`): a row is inserted, or an expired or
 * stale one taken over, and `claim` comes back; nothing comes back when another request holds it.
 * Concurrent claims of one key, from any instance, are decided by the primary key: ON CONFLICT
 * waits for the other claim's commit and then re-checks the row.
 */
const CLAIM_KEY = `
  INSERT INTO idempotency_keys (token_name, key, fingerprint, claim) VALUES ($1, $2, $3, $4)
  ON CONFLICT (token_name, key) DO UPDATE
    SET fingerprint = excluded.fingerprint, claim = excluded.claim, claimed_at = now(), status = NULL, body = NULL
    WHERE idempotency_keys.claimed_at < now() - $6::bigint * interval '1 millisecond'
       OR (idempotency_keys.status IS NULL
           AND idempotency_keys.claimed_at < now() - $5::bigint * interval '1 millisecond'
           AND idempotency_keys.fingerprint = excluded.fingerprint)
  RETURNING claim`;

/**
 * A create or delete carrying an Idempotency-Key, in one statement (so one transaction): `held`
 * locks the key's row while this request holds it (`$3`), the change is made only then, and its
 * answer (`$4`, `$5`) is stored only when it was made. A claim taking the key over concurrently
 * either waits for this statement and then finds the key completed, or commits first, and then
 * `held` re-reads the row, finds another claim and nothing changes. `$1`/`$2` are the key. The
 * change's event is appended as for unkeyed changes (see `appendEvents`).
 */
function keyedChange(type: StoredEvent['type'], change: string): string {
  return `
    WITH held AS (
      SELECT 1 FROM idempotency_keys WHERE token_name = $1 AND key = $2 AND claim = $3 AND status IS NULL
      FOR UPDATE
    ),
    ${change},
    answered AS (
      UPDATE idempotency_keys SET status = $4::integer, body = $5::text
      WHERE token_name = $1 AND key = $2 AND EXISTS (SELECT 1 FROM changed)
    ),
    appended AS (
      INSERT INTO plant_events (type, plant_id, name, tag)
      SELECT '${type}', changed.id, changed.name, changed.tag
      FROM changed, (SELECT pg_advisory_xact_lock(${EVENTS_LOCK_KEY})) AS ordered
      RETURNING id
    )
    SELECT (SELECT count(*) FROM held) AS held, (SELECT count(*) FROM changed) AS changed,
      (SELECT pg_notify('${EVENTS_CHANNEL}', '') FROM appended LIMIT 1) AS notified`;
}

/**
 * `$6`–`$8` the plant; `$9`–`$11` its deliveries' ids, URLs and payloads, one array per column;
 * `$12` the endpoints' payload (NULL: none, see `fanOut`).
 */
const KEYED_CREATE = keyedChange(
  'plant.created',
  `
    changed AS (
      INSERT INTO plants (id, name, tag) SELECT $6::bigint, $7::text, $8::text FROM held
      ON CONFLICT (id) DO NOTHING RETURNING id, name, tag
    ),
    created AS (SELECT id FROM changed),
    enqueued AS (
      INSERT INTO webhook_deliveries (id, url, payload)
      SELECT delivery.id, delivery.url, delivery.payload
      FROM changed, unnest($9::text[], $10::text[], $11::text[]) AS delivery (id, url, payload)
    ),
    ${fanOut('(SELECT $6::bigint AS plant_id, $12::text AS payload WHERE $12::text IS NOT NULL) AS p')}`,
);

const ENDPOINT_COLUMNS =
  'id, owner, url, description, secret, previous_secret, previous_secret_expires_at, created_at, disabled_at, disabled_reason';
const ENDPOINT_DELIVERY_COLUMNS =
  'id, event, status, attempts, last_response_code, last_error, next_attempt_at, created_at';

/** An endpoint and its deliveries, in one statement: `$1` the id, `$2` the owner (NULL: any). */
const DELETE_ENDPOINT = `
  WITH gone AS (DELETE FROM webhook_endpoints WHERE id = $1 AND ($2::text IS NULL OR owner = $2) RETURNING id),
  deliveries AS (DELETE FROM webhook_deliveries WHERE endpoint_id IN (SELECT id FROM gone))
  SELECT id FROM gone`;

/**
 * Disables an endpoint (`$1`) for a reason (`$2`) unless it is already, and fails its pending
 * deliveries with the reason it keeps, in one statement.
 */
const DISABLE_ENDPOINT = `
  WITH disabled AS (
    UPDATE webhook_endpoints
    SET disabled_at = coalesce(disabled_at, now()), disabled_reason = coalesce(disabled_reason, $2)
    WHERE id = $1
    RETURNING ${ENDPOINT_COLUMNS}
  ),
  failed AS (
    UPDATE webhook_deliveries AS d
    SET status = 'failed', last_error = 'endpoint disabled (' || disabled.disabled_reason || ')', updated_at = now()
    FROM disabled WHERE d.endpoint_id = disabled.id AND d.status = 'pending'
  )
  SELECT * FROM disabled`;

/** Revokes a token (`$1`) and disables its endpoints, failing their pending deliveries, in one statement. */
const REVOKE_TOKEN = `
  WITH revoked AS (
    UPDATE api_tokens SET revoked_at = now() WHERE name = $1 AND revoked_at IS NULL RETURNING name
  ),
  disabled AS (
    UPDATE webhook_endpoints SET disabled_at = now(), disabled_reason = 'token_revoked'
    WHERE owner IN (SELECT name FROM revoked) AND disabled_at IS NULL
    RETURNING id
  ),
  failed AS (
    UPDATE webhook_deliveries SET status = 'failed', last_error = 'endpoint disabled (token_revoked)', updated_at = now()
    WHERE status = 'pending' AND endpoint_id IN (SELECT id FROM disabled)
  )
  SELECT (SELECT count(*) FROM revoked) AS revoked, (SELECT count(*) FROM disabled) AS disabled`;

/** The endpoint summaries of the admin listing; `$1` an owner, or NULL for every endpoint. */
const ENDPOINT_SUMMARIES = `
  SELECT e.id, e.owner, e.url, e.description, e.created_at, e.disabled_at, e.disabled_reason,
    (SELECT count(*) FROM webhook_deliveries AS d WHERE d.endpoint_id = e.id AND d.status = 'pending') AS pending,
    (SELECT count(*) FROM webhook_deliveries AS d WHERE d.endpoint_id = e.id AND d.status = 'failed') AS failed
  FROM webhook_endpoints AS e
  WHERE $1::text IS NULL OR e.owner = $1
  ORDER BY e.created_at, e.id`;

/**
 * The advisory lock a registration holds while it counts and inserts an owner's endpoints, so
 * concurrent registrations of one owner (on any instance) never pass the limit together: any fixed
 * int4 no other application takes, with the owner's hash as the second key.
 */
const ENDPOINTS_LOCK_KEY = 723491773;

/** `$6` the id. */
const KEYED_DELETE = keyedChange(
  'plant.deleted',
  `
    changed AS (
      DELETE FROM plants WHERE id = $6::bigint AND EXISTS (SELECT 1 FROM held)
      RETURNING id, NULL::text AS name, NULL::text AS tag
    )`,
);

/** Oldest first, at most `$2` keys; keys another instance is pruning right now are left to it. */
const PRUNE_KEYS = `
  DELETE FROM idempotency_keys WHERE (token_name, key) IN (
    SELECT token_name, key FROM idempotency_keys
    WHERE claimed_at < now() - $1::bigint * interval '1 millisecond'
    ORDER BY claimed_at
    LIMIT $2
    FOR UPDATE SKIP LOCKED
  )`;

const SELECT_TOKENS = 'SELECT name, digest, scopes, created_at, revoked_at FROM api_tokens';

const INT8_OID = 20;
/** int8 as an exact bigint, for this store's connections only (pg's global parsers stay untouched). */
const types: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8_OID && format !== 'binary'
      ? (text: string) => BigInt(text)
      : pg.types.getTypeParser(oid, format)) as pg.CustomTypesConfig['getTypeParser'],
};

const APPLICATION_NAME = 'plant-store-api';
/** Session settings of every pooled connection (sent at connect). */
export const DURABLE_SESSION = '-c synchronous_commit=on';
/** Bound on the migration step (waiting for the lock included); migrations are not on a request path. */
const MIGRATION_TIMEOUT_MS = 60_000;
/**
 * The advisory lock that serialises migrations across instances: any fixed int8 that no other
 * application using this database takes.
 */
const MIGRATION_LOCK_KEY = '7234917730117001';

/**
 * SQLSTATE classes meaning "the database cannot serve this now" rather than "this statement is
 * wrong": 08 connection exception, 40 transaction rollback (serialization failure, deadlock; routine
 * on distributed engines), 53 insufficient resources (too many connections), 57 operator
 * intervention (shutdown, statement timeout), 58 system error. Also 25006 (see `toStoreError`).
 */
const UNAVAILABLE_CLASSES = new Set(['08', '40', '53', '57', '58']);

/**
 * The shared store for several api instances: PostgreSQL through a `pg` pool. Creates are group
 * committed: those made together become one autocommit `INSERT … ON CONFLICT (id) DO NOTHING`
 * statement that also inserts their deliveries, answered after the server reports the COMMIT,
 * durable because every connection sets `synchronous_commit = on`. Concurrent creates of one id,
 * from any number of instances, are decided by the primary key: exactly one inserts. Migrations run
 * first.
 */
export async function openPostgresStore(options: PostgresStoreOptions): Promise<PlantStore> {
  await migratePostgres(options);
  const { url, poolSize, timeoutMs } = options;
  const pool = new pg.Pool({
    connectionString: url,
    max: poolSize,
    idleTimeoutMillis: 10_000,
    connectionTimeoutMillis: timeoutMs,
    // The server gives up too: a statement this process stopped waiting for runs on there for at
    // most this long (and may still commit meanwhile: a 503 create has an unknown outcome).
    statement_timeout: timeoutMs,
    // Keeps idle connections alive through NATs and load balancers; dead ones are found by the
    // per-call bound, not by TCP keepalive (which takes minutes).
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
    application_name: APPLICATION_NAME,
    // A create is answered after its COMMIT; with this, that COMMIT returns only once it is
    // flushed to disk, whatever the server's or the database's default says.
    options: DURABLE_SESSION,
    types,
  });
  // An idle connection the server closed (restart, failover) is dropped by the pool; its error
  // must not crash the process. Errors while a statement runs reach that statement instead.
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));

  const inFlight = new Set<Promise<unknown>>();
  let closing: Promise<void> | undefined;

  /** A connection of the pool; none to be had is the store being unavailable. */
  async function connect(): Promise<pg.PoolClient> {
    try {
      return await pool.connect();
    } catch (cause) {
      throw new StoreUnavailableError('no PostgreSQL connection could be had', { cause });
    }
  }

  async function query<R extends pg.QueryResultRow>(
    name: string,
    text: string,
    values: unknown[],
  ): Promise<pg.QueryResult<R>> {
    const deadline = performance.now() + timeoutMs;
    const client = await connect();
    try {
      // What is left of the call's time bound; pg destroys the connection when it runs out.
      const queryTimeout = Math.max(1, Math.ceil(deadline - performance.now()));
      const result = await client.query<R>({
        name,
        text,
        values,
        query_timeout: queryTimeout,
      } as pg.QueryConfig);
      client.release();
      return result;
    } catch (cause) {
      const error = toStoreError(cause);
      // A connection that failed for a reason other than its statement is closed, not reused.
      client.release(error instanceof StoreUnavailableError ? error : undefined);
      throw error;
    }
  }

  /**
   * A create or delete carrying an Idempotency-Key, as one statement (`KEYED_CREATE`,
   * `KEYED_DELETE`): rejects with `KeyClaimLostError`, having changed nothing, when the request no
   * longer holds the key.
   */
  async function keyed(name: string, text: string, answer: KeyedAnswer, values: unknown[]): Promise<boolean> {
    const { tokenName, key, claim, status, body } = answer;
    const { rows } = await query<{ held: bigint; changed: bigint }>(name, text, [
      tokenName,
      key,
      claim,
      status,
      body,
      ...values,
    ]);
    if (Number(rows[0]!.held) === 0) {
      throw new KeyClaimLostError('the Idempotency-Key was claimed by another request');
    }
    return Number(rows[0]!.changed) === 1;
  }

  const idempotencyKeys: IdempotencyKeyStore = {
    claim: ({ tokenName, key, fingerprint, claim, inFlightMs, ttlMs }) =>
      call(async () => {
        // A holder may free the key between the two statements: then claim again.
        for (;;) {
          const taken = await query('keys-claim', CLAIM_KEY, [
            tokenName,
            key,
            fingerprint,
            claim,
            inFlightMs,
            ttlMs,
          ]);
          if (taken.rowCount === 1) return { state: 'claimed' } satisfies ClaimOutcome;
          const { rows } = await query<{ fingerprint: string; status: number | null; body: string | null }>(
            'keys-read',
            'SELECT fingerprint, status, body FROM idempotency_keys WHERE token_name = $1 AND key = $2',
            [tokenName, key],
          );
          const row = rows[0];
          if (row === undefined) continue;
          return row.status === null
            ? ({ state: 'in_flight', fingerprint: row.fingerprint } satisfies ClaimOutcome)
            : ({
                state: 'completed',
                fingerprint: row.fingerprint,
                answer: { status: row.status, body: row.body },
              } satisfies ClaimOutcome);
        }
      }),
    release: ({ tokenName, key, claim }) =>
      call(async () => {
        await query(
          'keys-release',
          'DELETE FROM idempotency_keys WHERE token_name = $1 AND key = $2 AND claim = $3 AND status IS NULL',
          [tokenName, key, claim],
        );
      }),
    prune: ({ olderThanMs, limit }) =>
      call(async () => (await query('keys-prune', PRUNE_KEYS, [olderThanMs, limit])).rowCount ?? 0),
  };

  function call<T>(operation: () => Promise<T>): Promise<T> {
    if (closing) return Promise.reject(new StoreUnavailableError('store is closed'));
    const running = operation();
    inFlight.add(running);
    const forget = () => inFlight.delete(running);
    running.then(forget, forget);
    return running;
  }

  /** Listeners of `events.watch`, and the LISTEN connection that wakes them while there are any. */
  const watchers = new Set<() => void>();
  let listening: { stop(): Promise<void> } | undefined;
  const wake = () => {
    for (const listener of watchers) listener();
  };

  /** Whether a statement changed exactly one row. */
  const changedOne = (name: string, text: string, values: unknown[]) =>
    call(async () => (await query(name, text, values)).rowCount === 1);

  /** The rows a statement answers, each converted. */
  const rowsOf = <R extends pg.QueryResultRow, T>(
    name: string,
    text: string,
    values: unknown[],
    convert: (row: R) => T,
  ) => call(async () => (await query<R>(name, text, values)).rows.map(convert));

  /** The one value a one-row, one-column statement answers. */
  const scalar = (name: string, text: string, values: unknown[] = []) =>
    call(async () => {
      const { rows } = await query<{ value: bigint }>(name, text, values);
      return Object.values(rows[0]!)[0] as bigint;
    });

  const events: EventLog = {
    after: (after, limit) =>
      rowsOf(
        'events-after',
        'SELECT id, type, plant_id, name, tag, created_at FROM plant_events WHERE id > $1 ORDER BY id LIMIT $2',
        [after.toString(), limit],
        fromRow.toEvent,
      ),
    head: () =>
      scalar(
        'events-head',
        'SELECT GREATEST((SELECT max(id) FROM plant_events), pruned_through) FROM event_log',
      ),
    prunedThrough: () => scalar('events-pruned-through', 'SELECT pruned_through FROM event_log'),
    countAfter: async (after, limit) =>
      Number(
        await scalar(
          'events-count-after',
          'SELECT count(*) FROM (SELECT 1 FROM plant_events WHERE id > $1 ORDER BY id LIMIT $2) AS following',
          [after.toString(), limit],
        ),
      ),
    prune: async ({ olderThanMs, limit }) =>
      Number(await scalar('events-prune', PRUNE_EVENTS, [olderThanMs, limit])),
    watch(listener) {
      watchers.add(listener);
      // Every (re)connection wakes the watchers too: what was committed while it was down is read then.
      listening ??= listen({ url, channel: EVENTS_CHANNEL, timeoutMs, onNotify: wake });
      return () => {
        watchers.delete(listener);
      };
    },
  };

  // Group commit. The creates made in one turn of the event loop go out together at its end
  // (setImmediate), as one statement and so one COMMIT; while `poolSize` batches are running,
  // later creates wait for one of them to end and go out together then. Each create is still
  // answered on its own: true when its plant was inserted, false when the id existed.
  let queued: PendingCreate[] = [];
  /** The ids of `queued`: the same id twice in one statement would be answered as inserted twice. */
  const queuedIds = new Map<bigint, Promise<boolean>>();
  let flushScheduled = false;
  let runningBatches = 0;

  function enqueueCreate(
    plant: NewPlant,
    outbox: readonly NewDelivery[],
    endpointPayload: string | undefined,
  ): Promise<boolean> {
    const earlier = queuedIds.get(plant.id);
    if (earlier !== undefined) {
      // Decided once the earlier create of this id has committed (or failed).
      const again = () => enqueueCreate(plant, outbox, endpointPayload);
      return earlier.then(again, again);
    }
    const created = new Promise<boolean>((resolve, reject) => {
      queued.push({ plant, outbox, endpointPayload, resolve, reject });
    });
    queuedIds.set(plant.id, created);
    scheduleFlush();
    return created;
  }

  function scheduleFlush(): void {
    if (flushScheduled || runningBatches >= poolSize || queued.length === 0) return;
    flushScheduled = true;
    setImmediate(flush);
  }

  function flush(): void {
    flushScheduled = false;
    while (queued.length > 0 && runningBatches < poolSize) {
      const batch = queued.slice(0, MAX_BATCH);
      queued = queued.slice(MAX_BATCH);
      for (const entry of batch) queuedIds.delete(entry.plant.id);
      runningBatches++;
      void runBatch(batch).finally(() => {
        runningBatches--;
        scheduleFlush();
      });
    }
  }

  async function runBatch(batch: PendingCreate[]): Promise<void> {
    try {
      const inserted = await insertBatch(batch);
      for (const entry of batch) entry.resolve(inserted.has(entry.plant.id));
    } catch (error) {
      if (batch.length === 1 || error instanceof StoreUnavailableError) {
        for (const entry of batch) entry.reject(error);
        return;
      }
      // The server refused one of the plants: each goes again on its own, so only that one fails.
      await Promise.all(
        batch.map((entry) =>
          insertBatch([entry]).then((inserted) => entry.resolve(inserted.has(entry.plant.id)), entry.reject),
        ),
      );
    }
  }

  async function insertBatch(batch: PendingCreate[]): Promise<Set<bigint>> {
    const plants = batch.map((entry) => entry.plant).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const deliveries = batch.flatMap((entry) =>
      entry.outbox.map((delivery) => ({ plantId: entry.plant.id, delivery })),
    );
    const { rows } = await query<{ id: bigint }>('plants-create-batch', CREATE_BATCH, [
      plants.map((plant) => plant.id.toString()),
      plants.map((plant) => plant.name),
      plants.map((plant) => plant.tag ?? null),
      deliveries.map(({ plantId }) => plantId.toString()),
      deliveries.map(({ delivery }) => delivery.id),
      deliveries.map(({ delivery }) => delivery.url),
      deliveries.map(({ delivery }) => delivery.payload),
      ...endpointPayloads(batch),
    ]);
    return new Set(rows.map((row) => row.id));
  }

  /** `$8`, `$9` of CREATE_BATCH: the plants that fan out to the endpoints, and their payloads. */
  function endpointPayloads(batch: PendingCreate[]): [string[], string[]] {
    const fanning = batch.filter((entry) => entry.endpointPayload !== undefined);
    return [
      fanning.map((entry) => entry.plant.id.toString()),
      fanning.map((entry) => entry.endpointPayload!),
    ];
  }

  const deliveries: DeliveryOutbox = {
    claim: (options) =>
      call(async () => {
        const { limit, leaseMs } = options;
        const { rows } =
          'url' in options
            ? await query<fromRow.DeliveryRow>('deliveries-claim', CLAIM, [options.url, limit, leaseMs])
            : await query<fromRow.DeliveryRow>('deliveries-claim-endpoint', CLAIM_FOR_ENDPOINT, [
                options.endpointId,
                limit,
                leaseMs,
              ]);
        return rows.map(fromRow.toDelivery);
      }),
    pendingUrls: ({ limit }) =>
      call(async () => {
        const { rows } = await query<{ url: string }>('deliveries-pending-urls', PENDING_URLS, [limit]);
        return rows.map((row) => row.url);
      }),
    pendingEndpoints: ({ limit }) =>
      rowsOf<{ id: string }, string>(
        'deliveries-pending-endpoints',
        PENDING_ENDPOINTS,
        [limit],
        (row) => row.id,
      ),
    markDelivered: (ids, responseCodes) =>
      call(async () => {
        await query(
          'deliveries-delivered',
          `UPDATE webhook_deliveries AS d SET status = 'delivered', updated_at = now(), last_response_code = outcome.code
           FROM unnest($1::text[], $2::int[]) AS outcome (id, code)
           WHERE d.id = outcome.id AND d.status = 'pending'`,
          [ids, ids.map((_, i) => responseCodes?.[i] ?? null)],
        );
      }),
    release: (claims) =>
      call(async () => {
        await query('deliveries-release', RELEASE, [
          claims.map((claim) => claim.id),
          claims.map((claim) => claim.attempts),
        ]);
      }),
    retry: (id, { delayMs, error, responseCode }) =>
      call(async () => {
        await query(
          'deliveries-retry',
          `UPDATE webhook_deliveries
           SET next_attempt_at = now() + $2::bigint * interval '1 millisecond', last_error = $3,
               last_response_code = $4, updated_at = now()
           WHERE id = $1 AND status = 'pending'`,
          [id, delayMs, error, responseCode ?? null],
        );
      }),
    markFailed: (id, error, responseCode) =>
      call(async () => {
        await query(
          'deliveries-failed',
          `UPDATE webhook_deliveries SET status = 'failed', last_error = $2, last_response_code = $3, updated_at = now()
           WHERE id = $1 AND status = 'pending'`,
          [id, error, responseCode ?? null],
        );
      }),
    enqueue: ({ id, endpointId, url, event, payload }, { maxPending }) =>
      call(() =>
        transaction(async (run) => {
          await run('SELECT pg_advisory_xact_lock($1, hashtext($2))', [PENDING_LOCK_KEY, endpointId]);
          const { rows } = await run<fromRow.EndpointDeliveryRow>(
            `INSERT INTO webhook_deliveries (id, endpoint_id, url, event, payload)
             SELECT $3, $1, $4, $5, $6 WHERE ${HAS_ROOM}
             RETURNING ${ENDPOINT_DELIVERY_COLUMNS}`,
            [endpointId, maxPending, id, url, event, payload],
          );
          return rows[0] === undefined ? 'full' : fromRow.toEndpointDelivery(rows[0]);
        }),
      ),
    redeliver: ({ id, endpointId, maxPending }) =>
      call(() =>
        transaction(async (run) => {
          await run('SELECT pg_advisory_xact_lock($1, hashtext($2))', [PENDING_LOCK_KEY, endpointId]);
          const { rows } = await run<fromRow.EndpointDeliveryRow & { room: boolean }>(
            `SELECT ${HAS_ROOM} AS room FROM webhook_deliveries WHERE id = $3 AND endpoint_id = $1`,
            [endpointId, maxPending, id],
          );
          if (rows[0] === undefined) return undefined;
          if (!rows[0].room) return 'full';
          const updated = await run<fromRow.EndpointDeliveryRow>(
            `UPDATE webhook_deliveries
             SET status = 'pending', attempts = 0, next_attempt_at = now(), last_error = NULL,
                 last_response_code = NULL, updated_at = now()
             WHERE id = $1 AND endpoint_id = $2
             RETURNING ${ENDPOINT_DELIVERY_COLUMNS}`,
            [id, endpointId],
          );
          return fromRow.toEndpointDelivery(updated.rows[0]!);
        }),
      ),
    listForEndpoint: ({ endpointId, limit, before }) =>
      call(async () => {
        let rows: fromRow.EndpointDeliveryRow[];
        const select = `SELECT ${ENDPOINT_DELIVERY_COLUMNS} FROM webhook_deliveries WHERE endpoint_id = $1`;
        const order = 'ORDER BY created_at DESC, id DESC LIMIT $2';
        if (before === undefined) {
          rows = (
            await query<fromRow.EndpointDeliveryRow>('deliveries-of-endpoint', `${select} ${order}`, [
              endpointId,
              limit + 1,
            ])
          ).rows;
        } else {
          const cursor = await query(
            'deliveries-of-endpoint-cursor',
            'SELECT 1 FROM webhook_deliveries WHERE id = $1 AND endpoint_id = $2',
            [before, endpointId],
          );
          if (cursor.rowCount === 0) return undefined;
          rows = (
            await query<fromRow.EndpointDeliveryRow>(
              'deliveries-of-endpoint-before',
              `${select} AND (created_at, id) < (SELECT created_at, id FROM webhook_deliveries WHERE id = $3) ${order}`,
              [endpointId, limit + 1, before],
            )
          ).rows;
        }
        return {
          deliveries: rows.slice(0, limit).map(fromRow.toEndpointDelivery),
          more: rows.length > limit,
        };
      }),
    discardOrphans: (endpointId) =>
      call(
        async () =>
          (
            await query(
              'deliveries-discard-orphans',
              'DELETE FROM webhook_deliveries WHERE endpoint_id = $1 AND NOT EXISTS (SELECT 1 FROM webhook_endpoints WHERE id = $1)',
              [endpointId],
            )
          ).rowCount ?? 0,
      ),
    listFailed: ({ limit }) =>
      call(async () => {
        const { rows } = await query<fromRow.FailedRow>(
          'deliveries-list-failed',
          `SELECT id, url, payload, attempts, created_at, last_error, updated_at FROM webhook_deliveries
           WHERE status = 'failed' ORDER BY created_at, id LIMIT $1`,
          [limit],
        );
        return rows.map(fromRow.toFailedDelivery);
      }),
    counts: () =>
      call(async () => {
        const { rows } = await query<{ status: 'pending' | 'delivered' | 'failed'; n: bigint }>(
          'deliveries-counts',
          'SELECT status, count(*) AS n FROM webhook_deliveries GROUP BY status',
          [],
        );
        const counts = { pending: 0, delivered: 0, failed: 0 };
        for (const row of rows) counts[row.status] = Number(row.n);
        return counts;
      }),
    depth: ({ cap }) =>
      call(async () => {
        const { rows } = await query<{ pending: bigint; failed: bigint }>('deliveries-depth', DEPTH, [cap]);
        return { pending: Number(rows[0]!.pending), failed: Number(rows[0]!.failed) };
      }),
    prune: ({ olderThanMs, limit }) =>
      call(async () => {
        const { rowCount } = await query('deliveries-prune', PRUNE, [olderThanMs, limit]);
        return rowCount ?? 0;
      }),
    pruneFailed: ({ olderThanMs, limit }) =>
      call(async () => {
        const { rowCount } = await query('deliveries-prune-failed', PRUNE_FAILED, [olderThanMs, limit]);
        return rowCount ?? 0;
      }),
  };

  const webhookEndpoints: WebhookEndpointStore = {
    create: ({ id, owner, url, description, secret }, { maxPerOwner }) =>
      call(() =>
        transaction(async (run) => {
          await run('SELECT pg_advisory_xact_lock($1, hashtext($2))', [ENDPOINTS_LOCK_KEY, owner]);
          const { rows } = await run<fromRow.EndpointRow>(
            `INSERT INTO webhook_endpoints (id, owner, url, description, secret)
             SELECT $1, $2, $3, $4, $5
             WHERE (SELECT count(*) FROM webhook_endpoints WHERE owner = $2) < $6
             RETURNING ${ENDPOINT_COLUMNS}`,
            [id, owner, url, description, secret, maxPerOwner],
          );
          return rows[0] === undefined ? false : fromRow.toEndpoint(rows[0]);
        }),
      ),
    list: (owner) =>
      rowsOf(
        'endpoints-list',
        `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE owner = $1 ORDER BY created_at, id`,
        [owner],
        fromRow.toEndpoint,
      ),
    get: async (id, owner) =>
      (
        await rowsOf(
          'endpoints-get',
          `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE id = $1 AND ($2::text IS NULL OR owner = $2)`,
          [id, owner ?? null],
          fromRow.toEndpoint,
        )
      )[0],
    delete: (id, owner) => changedOne('endpoints-delete', DELETE_ENDPOINT, [id, owner ?? null]),
    disable: async (id, reason) =>
      (await rowsOf('endpoints-disable', DISABLE_ENDPOINT, [id, reason], fromRow.toEndpoint))[0],
    enable: async (id) =>
      (
        await rowsOf(
          'endpoints-enable',
          `UPDATE webhook_endpoints SET disabled_at = NULL, disabled_reason = NULL WHERE id = $1
           RETURNING ${ENDPOINT_COLUMNS}`,
          [id],
          fromRow.toEndpoint,
        )
      )[0],
    rotate: async (id, owner, { secret, overlapMs }) =>
      (
        await rowsOf(
          'endpoints-rotate',
          `UPDATE webhook_endpoints
           SET previous_secret = secret, previous_secret_expires_at = now() + $4::bigint * interval '1 millisecond',
               secret = $3
           WHERE id = $1 AND owner = $2
           RETURNING ${ENDPOINT_COLUMNS}`,
          [id, owner, secret, overlapMs],
          fromRow.toEndpoint,
        )
      )[0],
    summaries: ({ owner }) =>
      rowsOf('endpoints-summaries', ENDPOINT_SUMMARIES, [owner ?? null], fromRow.toEndpointSummary),
  };

  /**
   * Runs `work` in one transaction on one pooled connection, within the call's time bound; its
   * statements are run with `run`. Rolled back when `work` throws.
   */
  async function transaction<T>(
    work: (
      run: <R extends pg.QueryResultRow>(text: string, values: unknown[]) => Promise<pg.QueryResult<R>>,
    ) => Promise<T>,
  ): Promise<T> {
    const deadline = performance.now() + timeoutMs;
    const client = await connect();
    const run = <R extends pg.QueryResultRow>(text: string, values: unknown[] = []) =>
      client.query<R>({
        text,
        values,
        query_timeout: Math.max(1, Math.ceil(deadline - performance.now())),
      } as pg.QueryConfig);
    try {
      await run('BEGIN');
      const result = await work(run);
      await run('COMMIT');
      client.release();
      return result;
    } catch (cause) {
      const error = toStoreError(cause);
      await client.query('ROLLBACK').catch(() => {});
      client.release(error instanceof StoreUnavailableError ? error : undefined);
      throw error;
    }
  }

  const tokens: TokenStore = {
    create: ({ name, digest, scopes }) =>
      changedOne(
        'tokens-create',
        'INSERT INTO api_tokens (name, digest, scopes) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING',
        [name, digest, scopes.join(',')],
      ),
    revoke: (name) =>
      call(async () => {
        const { rows } = await query<{ revoked: bigint; disabled: bigint }>('tokens-revoke', REVOKE_TOKEN, [
          name,
        ]);
        return Number(rows[0]!.revoked) === 0 ? undefined : { endpointsDisabled: Number(rows[0]!.disabled) };
      }),
    list: () => rowsOf('tokens-list', `${SELECT_TOKENS} ORDER BY name`, [], fromRow.toTokenRecord),
    active: () =>
      rowsOf('tokens-active', `${SELECT_TOKENS} WHERE revoked_at IS NULL`, [], fromRow.toStoredToken),
  };

  return {
    create: (
      plant: NewPlant,
      outbox: readonly NewDelivery[] = [],
      answer?: KeyedAnswer,
      endpointPayload?: string,
    ) =>
      call(() =>
        // A keyed create goes on its own: its statement also checks and completes its key.
        answer
          ? keyed('plants-insert-keyed', KEYED_CREATE, answer, [
              plant.id.toString(),
              plant.name,
              plant.tag ?? null,
              outbox.map((delivery) => delivery.id),
              outbox.map((delivery) => delivery.url),
              outbox.map((delivery) => delivery.payload),
              endpointPayload ?? null,
            ])
          : enqueueCreate(plant, outbox, endpointPayload),
      ),
    delete: (id, answer) =>
      call(async () => {
        if (answer) return keyed('plants-delete-keyed', KEYED_DELETE, answer, [id.toString()]);
        const { rowCount } = await query('plants-delete', DELETE, [id.toString()]);
        return rowCount === 1;
      }),
    get: (id) =>
      call(async () => {
        const { rows } = await query<fromRow.PlantRow>(
          'plants-get',
          'SELECT id, name, tag FROM plants WHERE id = $1',
          [id.toString()],
        );
        return rows[0] === undefined ? undefined : fromRow.toPlant(rows[0]);
      }),
    list: ({ limit, after, maxBytes = PAGE_BUDGET_BYTES }) =>
      call(async () => {
        const { rows } =
          after === undefined
            ? await query<PageRow>('plants-list', pageQuery('TRUE'), [limit + 1, maxBytes])
            : await query<PageRow>('plants-list-after', pageQuery('id > $3'), [
                limit + 1,
                maxBytes,
                after.toString(),
              ]);
        const plants = rows.slice(0, limit).map(fromRow.toPlant);
        return { plants, more: Number(rows[0]?.candidates ?? 0) > plants.length };
      }),
    ping: () =>
      call(async () => {
        await query('plants-ping', 'SELECT 1', []);
      }),
    // Each call fails or succeeds on its own, and the store recovers when the server does.
    failed: new Promise<Error>(() => {}),
    events,
    deliveries,
    tokens,
    idempotencyKeys,
    webhookEndpoints,
    close() {
      closing ??= (async () => {
        // Calls already running finish (their answers are delivered) before the pool ends.
        while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
        await listening?.stop();
        await pool.end();
      })();
      return closing;
    },
  };
}

/**
 * Takes the schema to `to` (default: the newest) with the runner of `migrate.ts`, under a
 * session-level `pg_advisory_lock`, so instances starting together apply each version exactly once
 * (the others wait, then find nothing to do). Each version is its own transaction.
 */
export async function migratePostgres({
  url,
  timeoutMs,
  to,
}: Pick<PostgresStoreOptions, 'url' | 'timeoutMs'> & MigrateOptions): Promise<MigrationResult> {
  const client = new pg.Client({
    connectionString: url,
    connectionTimeoutMillis: timeoutMs,
    statement_timeout: MIGRATION_TIMEOUT_MS,
    query_timeout: MIGRATION_TIMEOUT_MS,
    application_name: `${APPLICATION_NAME}-migrate`,
  });
  client.on('error', () => {});
  const run = (text: string, values?: unknown[]) =>
    client.query(text, values).catch((cause: unknown) => {
      throw toStoreError(cause);
    });
  return migrate(
    {
      dialect: 'postgres',
      label: 'PostgreSQL',
      async locked(work) {
        try {
          await client.connect();
        } catch (cause) {
          await client.end().catch(() => {});
          throw new StoreUnavailableError('PostgreSQL could not be reached to migrate', { cause });
        }
        try {
          await run('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
          await run(
            'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())',
          );
          return await work();
        } finally {
          // Ending the session releases the advisory lock too.
          await client.end().catch(() => {});
        }
      },
      async applied() {
        const { rows } = await run('SELECT version FROM schema_migrations');
        return rows.map((row: { version: number }) => row.version);
      },
      async step(sql, { version, name }, direction) {
        try {
          await run('BEGIN');
          await run(sql);
          if (direction === 'down') await run('DELETE FROM schema_migrations WHERE version = $1', [version]);
          else await run('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [version, name]);
          await run('COMMIT');
        } catch (error) {
          await client.query('ROLLBACK').catch(() => {});
          throw error;
        }
      },
    },
    { to },
  );
}

/** A failure to reach or use the server becomes `StoreUnavailableError` (503); anything else is a bug (500). */
function toStoreError(cause: unknown): Error {
  if (cause instanceof StoreUnavailableError) return cause;
  if (cause instanceof pg.DatabaseError) {
    const code = cause.code ?? '';
    // 25006: the server is read-only, e.g. a standby after a failover.
    if (!UNAVAILABLE_CLASSES.has(code.slice(0, 2)) && code !== '25006') return cause;
  }
  // Not a server answer: a refused or reset socket, a timeout, a pool that was ended.
  return new StoreUnavailableError('PostgreSQL is unavailable', { cause });
}
