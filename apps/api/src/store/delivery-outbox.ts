import { type Db, statements, type Time, toDate } from './sql.ts';
import type {
  Delivery,
  DeliveryEvent,
  DeliveryOutbox,
  EndpointDelivery,
  FailedDelivery,
  Prune,
  Retry,
} from './contract.ts';

type Integer = number | bigint;
type DeliveryRow = { id: string; url: string; payload: string; attempts: Integer; created_at: Time } & {
  endpoint_id?: string | null; // This and the next two: read by claims only.
  event?: DeliveryEvent;
  trace_context?: string | null;
};
type FailedRow = DeliveryRow & { last_error: string; updated_at: Time };
type EndpointDeliveryRow = Pick<EndpointDelivery, 'id' | 'event' | 'status'> & {
  attempts: Integer;
  last_response_code: Integer | null;
  last_error: string | null;
  next_attempt_at: Time;
  created_at: Time;
};

function toDelivery(row: DeliveryRow): Delivery {
  const { id, url, payload, attempts, created_at, endpoint_id, event, trace_context } = row;
  const delivery: Delivery = { id, url, payload, attempts: Number(attempts), createdAt: toDate(created_at) };
  if (endpoint_id) delivery.endpoint = { id: endpoint_id, event: event ?? 'plant.created' };
  if (trace_context) delivery.traceContext = trace_context;
  return delivery;
}

function toEndpointDelivery(row: EndpointDeliveryRow): EndpointDelivery {
  const { id, event, status, last_response_code: code, last_error: lastError } = row;
  const nextAttemptAt = status === 'pending' ? toDate(row.next_attempt_at) : null;
  const lastResponseCode = code === null ? null : Number(code);
  const [attempts, createdAt] = [Number(row.attempts), toDate(row.created_at)];
  return { id, event, status, attempts, lastResponseCode, lastError, nextAttemptAt, createdAt };
}

const ENDPOINT_DELIVERY =
  'id, event, status, attempts, last_response_code, last_error, next_attempt_at, created_at';
const CLAIMED = 'id, url, payload, attempts, created_at, endpoint_id, event, trace_context';
/** A claim pushes `next_attempt_at` to the lease's end, hiding the delivery from later claims until then. */
const claimOf = (subscriber: string) => `
  UPDATE webhook_deliveries SET attempts = attempts + 1, next_attempt_at = {now + @leaseMs}, updated_at = {now}
  WHERE id IN (SELECT id FROM webhook_deliveries WHERE status = 'pending' AND ${subscriber}
    AND next_attempt_at <= {now} ORDER BY next_attempt_at LIMIT @limit {skip locked})
  RETURNING ${CLAIMED}`;
/** The distinct `column`s of pending deliveries, by a loose index scan: one probe a value. */
const pendingOf = (column: string, where: string) => `
  WITH RECURSIVE found (value, n) AS (
    SELECT min(${column}), 1 FROM webhook_deliveries WHERE status = 'pending' AND ${where}
    UNION ALL
    SELECT (SELECT min(${column}) FROM webhook_deliveries
            WHERE status = 'pending' AND ${where} AND ${column} > found.value), n + 1
    FROM found WHERE found.value IS NOT NULL AND n <= @limit
  )
  SELECT value FROM found WHERE value IS NOT NULL LIMIT @limit`;
/** Whether `@endpointId` has fewer than `@maxPending` pending deliveries, reading at most that many. */
const HAS_ROOM = `(SELECT count(*) FROM (SELECT 1 FROM webhook_deliveries
  WHERE endpoint_id = @endpointId AND status = 'pending' LIMIT @maxPending) AS p) < @maxPending`;
const OF_ENDPOINT = `SELECT ${ENDPOINT_DELIVERY} FROM webhook_deliveries WHERE endpoint_id = @endpointId`;
const NEWEST_FIRST = 'ORDER BY created_at DESC, {seq} DESC LIMIT @limit';
/** Oldest first, through the partial index of `status`. */
const pruneOf = (status: 'delivered' | 'failed') => `
  DELETE FROM webhook_deliveries WHERE id IN (SELECT id FROM webhook_deliveries
    WHERE status = '${status}' AND updated_at < {now - @olderThanMs} ORDER BY updated_at LIMIT @limit {skip locked})`;
const settle = (set: string) => `UPDATE webhook_deliveries SET ${set}, last_error = @error,
  last_response_code = @responseCode, updated_at = {now} WHERE id = @id AND status = 'pending'`;
/** Each count walks at most `@cap` entries of its partial index. */
const capped = (where: string, order: string) =>
  `(SELECT count(*) FROM (SELECT 1 FROM webhook_deliveries WHERE ${where} ORDER BY ${order} LIMIT @cap) AS c)`;

/**
 * Fails deliveries of `subscriber` due for more than `olderThanMs`: a claim (its lease) and a retry
 * (its backoff) move the due time, so one being attempted is never taken, only one left waiting.
 * Through the due indexes.
 */
const expireOf = (subscriber: string) => `
  UPDATE webhook_deliveries SET status = 'failed', last_error = @error, updated_at = {now}
  WHERE id IN (SELECT id FROM webhook_deliveries WHERE status = 'pending' AND ${subscriber}
    AND next_attempt_at < {now - @olderThanMs} LIMIT @limit {skip locked})
  RETURNING endpoint_id, url`;
/** `expireOf` on PostgreSQL, whose planner scans the whole table for `IN` a JSON list: a range of the due index per key. */
const expireEach = (subscriber: string) => `
  UPDATE webhook_deliveries SET status = 'failed', last_error = @error, updated_at = {now}
  WHERE id IN (SELECT due.id FROM {json @keys} AS k CROSS JOIN LATERAL (SELECT id FROM webhook_deliveries
    WHERE status = 'pending' AND ${subscriber} AND next_attempt_at < {now - @olderThanMs} LIMIT @limit {skip locked})
    AS due LIMIT @limit)
  RETURNING endpoint_id, url`;

const SQL = statements('deliveries', {
  claimForUrl: claimOf('endpoint_id IS NULL AND url = @url'),
  claimForEndpoint: claimOf('endpoint_id = @endpointId'),
  // Through webhook_deliveries_due_by_url and webhook_deliveries_due_by_endpoint.
  pendingUrls: pendingOf('url', 'endpoint_id IS NULL'),
  pendingEndpoints: pendingOf('endpoint_id', 'endpoint_id IS NOT NULL'),
  // `@outcomes`: [id, response code] pairs, one statement however many.
  delivered: `UPDATE webhook_deliveries SET status = 'delivered', updated_at = {now}, last_response_code = outcome.code
    FROM (SELECT value ->> 0 AS id, CAST(value ->> 1 AS INTEGER) AS code FROM {json @outcomes}) AS outcome
    WHERE webhook_deliveries.id = outcome.id AND status = 'pending'`,
  // `@claims`: [id, attempts its claim returned] pairs.
  release: `UPDATE webhook_deliveries SET attempts = attempts - 1, next_attempt_at = {now}, updated_at = {now}
    FROM (SELECT value ->> 0 AS id, CAST(value ->> 1 AS INTEGER) AS claimed FROM {json @claims}) AS claim
    WHERE webhook_deliveries.id = claim.id AND attempts = claim.claimed AND status = 'pending'`,
  // `@retries`: [id, delay in ms, error, response code] arrays, one statement however many.
  retry: `UPDATE webhook_deliveries SET next_attempt_at = {now + retried.delay_ms}, last_error = retried.error,
    last_response_code = retried.code, updated_at = {now}
    FROM (SELECT value ->> 0 AS id, CAST(value ->> 1 AS INTEGER) AS delay_ms, value ->> 2 AS error,
      CAST(value ->> 3 AS INTEGER) AS code FROM {json @retries}) AS retried
    WHERE webhook_deliveries.id = retried.id AND status = 'pending'`,
  failed: settle("status = 'failed'"),
  enqueue: `
    INSERT INTO webhook_deliveries (id, endpoint_id, url, event, payload, trace_context, next_attempt_at, created_at, updated_at)
    SELECT @id, @endpointId, @url, @event, @payload, @traceContext, {now}, {now}, {now} WHERE ${HAS_ROOM}
    RETURNING ${ENDPOINT_DELIVERY}`,
  roomFor: `SELECT ${HAS_ROOM} AS room FROM webhook_deliveries WHERE id = @id AND endpoint_id = @endpointId`,
  // An untraced redelivery's attempts still link to what enqueued the delivery.
  redeliver: `UPDATE webhook_deliveries SET status = 'pending', attempts = 0, next_attempt_at = {now},
    last_error = NULL, last_response_code = NULL, trace_context = coalesce(@traceContext, trace_context), updated_at = {now}
    WHERE id = @id AND endpoint_id = @endpointId RETURNING ${ENDPOINT_DELIVERY}`,
  ofEndpoint: `${OF_ENDPOINT} ${NEWEST_FIRST}`,
  isOfEndpoint: 'SELECT 1 AS one FROM webhook_deliveries WHERE id = @before AND endpoint_id = @endpointId',
  ofEndpointBefore: `${OF_ENDPOINT}
    AND (created_at, {seq}) < (SELECT created_at, {seq} FROM webhook_deliveries WHERE id = @before) ${NEWEST_FIRST}`,
  discardOrphans: `DELETE FROM webhook_deliveries
    WHERE endpoint_id = @endpointId AND NOT EXISTS (SELECT 1 FROM webhook_endpoints WHERE id = @endpointId)`,
  listFailed: `SELECT id, url, payload, attempts, created_at, last_error, updated_at FROM webhook_deliveries
    WHERE status = 'failed' ORDER BY created_at, id LIMIT @limit`,
  counts: 'SELECT status, count(*) AS n FROM webhook_deliveries GROUP BY status',
  depth: `SELECT
    ${capped(`status = 'pending' AND endpoint_id IS NULL`, 'url, next_attempt_at')} AS urls,
    ${capped(`status = 'pending' AND endpoint_id IS NOT NULL`, 'endpoint_id, next_attempt_at')} AS endpoints,
    ${capped(`status = 'failed'`, 'created_at')} AS failed`,
  prune: pruneOf('delivered'),
  // By the time they failed (see migration 9).
  pruneFailed: pruneOf('failed'),
  // `@keys`: [endpoint id] or [url] arrays.
  expireForEndpoints: expireOf('endpoint_id IN (SELECT value ->> 0 FROM {json @keys})'),
  expireForUrls: expireOf('endpoint_id IS NULL AND url IN (SELECT value ->> 0 FROM {json @keys})'),
});

/** PostgreSQL's own (SQLite has no LATERAL). */
const POSTGRES = statements('postgres.deliveries', {
  // `@claims`: [endpoint id, limit] pairs, each claimed as claimForEndpoint would. One statement for
  // many endpoints, where one each made a round of 1,000 endpoints 1,000 statements (healthy
  // deliveries' p99 3.0 s against 1.2 s).
  claimForEndpoints: `
  UPDATE webhook_deliveries SET attempts = attempts + 1, next_attempt_at = {now + @leaseMs}, updated_at = {now}
  WHERE id IN (SELECT due.id FROM {json @claims} AS c CROSS JOIN LATERAL (SELECT id FROM webhook_deliveries
    WHERE status = 'pending' AND endpoint_id = c.value ->> 0 AND next_attempt_at <= {now}
    ORDER BY next_attempt_at LIMIT CAST(c.value ->> 1 AS INTEGER) {skip locked}) AS due)
  RETURNING ${CLAIMED}`,
  expireForEndpoints: expireEach('endpoint_id = k.value ->> 0'),
  expireForUrls: expireEach('endpoint_id IS NULL AND url = k.value ->> 0'),
});

const retried = ({ id, delayMs, error, responseCode }: Retry) => [id, delayMs, error, responseCode ?? null];

/** Held by a ping or redelivery while it counts and adds, so no two pass WEBHOOK_PENDING_PER_ENDPOINT. */
const PENDING_LOCK_KEY = 723491774;

/**
 * The webhook outbox. A claim leases a delivery from every process (a dead worker delays it by a lease
 * at most); settling changes only pending deliveries, so a late answer never undoes a delivered one.
 */
export function deliveryOutbox(db: Db): DeliveryOutbox {
  const changes = async (...args: Parameters<Db['run']>) => (await db.run(...args)).changes;
  const done = async (...args: Parameters<Db['run']>) => void (await db.run(...args));
  const values = async (...args: Parameters<Db['all']>) =>
    (await db.all<{ value: string }>(...args)).map((row) => row.value);
  const claim: DeliveryOutbox['claim'] = async (options) => {
    const statement = 'url' in options ? SQL.claimForUrl : SQL.claimForEndpoint;
    return (await db.run<DeliveryRow>(statement, options)).rows.map(toDelivery);
  };
  return {
    /** Leases up to `limit` due deliveries of one subscriber (each gets its share) for `leaseMs`. */
    claim,
    claimEach: async (claims, leaseMs) => {
      if (db.dialect === 'sqlite')
        return Promise.all(claims.map((options) => claim({ ...options, leaseMs })));
      const endpoints = claims.flatMap((options) => ('endpointId' in options ? [options] : []));
      const pairs = JSON.stringify(endpoints.map(({ endpointId, limit }) => [endpointId, limit]));
      const [urls, rows] = await Promise.all([
        Promise.all(claims.map((options) => ('url' in options ? claim({ ...options, leaseMs }) : []))),
        endpoints.length > 0
          ? db.run<DeliveryRow>(POSTGRES.claimForEndpoints, { claims: pairs, leaseMs })
          : undefined,
      ]);
      const byEndpoint = new Map(endpoints.map(({ endpointId }): [string, Delivery[]] => [endpointId, []]));
      for (const row of rows?.rows ?? []) byEndpoint.get(row.endpoint_id!)!.push(toDelivery(row));
      return claims.map((options, n) =>
        'endpointId' in options ? byEndpoint.get(options.endpointId)! : urls[n]!,
      );
    },
    // SQLite's one writer takes them one after another anyway; PostgreSQL's pool also serves requests.
    claimsAtOnce: db.dialect === 'sqlite' ? 1 : 4,
    /** Up to `limit` operator URLs, and endpoints, with pending deliveries (due or not). */
    pendingUrls: (options: { limit: number }) => values(SQL.pendingUrls, options),
    pendingEndpoints: (options: { limit: number }) => values(SQL.pendingEndpoints, options),
    /** Marks `ids` delivered (acknowledged by `codes`) in one write, so outcomes keep up with creates. */
    markDelivered: (ids: readonly string[], codes?: readonly number[]) =>
      done(SQL.delivered, { outcomes: JSON.stringify(ids.map((id, i) => [id, codes?.[i] ?? null])) }),
    /** Hands claims back unattempted (shutdown, open breaker), due now; one claimed again is left alone. */
    release: (claims: readonly Pick<Delivery, 'id' | 'attempts'>[]) =>
      done(SQL.release, { claims: JSON.stringify(claims.map((c) => [c.id, c.attempts])) }),
    /** Makes the delivery due again in `delayMs`, recording why this attempt failed. */
    retry: (id: string, options: { delayMs: number; error: string; responseCode?: number }) =>
      done(SQL.retry, { retries: JSON.stringify([retried({ id, ...options })]) }),
    /** `retry` of many deliveries in one write: a dead endpoint's failures must not crowd out claims. */
    retryMany: (retries: readonly Retry[]) =>
      done(SQL.retry, { retries: JSON.stringify(retries.map(retried)) }),
    /** Stops retrying: the delivery is kept as failed. */
    markFailed: (id: string, error: string, responseCode?: number) =>
      done(SQL.failed, { id, error, responseCode }),
    /** Enqueues a ping to an endpoint, due at once; `'full'`, adding nothing, at `maxPending` pending. */
    enqueue: (delivery, { maxPending, traceContext }) => {
      const params = { ...delivery, maxPending, traceContext };
      return db.transaction(async (tx): Promise<EndpointDelivery | 'full'> => {
        await tx.lock(PENDING_LOCK_KEY, delivery.endpointId);
        const [row] = (await tx.run<EndpointDeliveryRow>(SQL.enqueue, params)).rows;
        return row === undefined ? 'full' : toEndpointDelivery(row);
      });
    },
    /** Makes an endpoint's delivery pending and due, attempts afresh; `undefined`: no such delivery. */
    redeliver: (options) => {
      const params = { traceContext: undefined, ...options };
      return db.transaction(async (tx): Promise<EndpointDelivery | 'full' | undefined> => {
        await tx.lock(PENDING_LOCK_KEY, options.endpointId);
        const [found] = (await tx.run<{ room: unknown }>(SQL.roomFor, options)).rows;
        if (found === undefined) return undefined;
        if (!found.room) return 'full';
        return toEndpointDelivery((await tx.run<EndpointDeliveryRow>(SQL.redeliver, params)).rows[0]!);
      });
    },
    /** An endpoint's deliveries, newest first, after `before`; `undefined` if `before` is not its. */
    listForEndpoint: async (options: { endpointId: string; limit: number; before?: string }) => {
      const { limit, before } = options;
      const params = { ...options, limit: limit + 1 };
      if (before !== undefined && (await db.all(SQL.isOfEndpoint, params)).length === 0) return undefined;
      const statement = before === undefined ? SQL.ofEndpoint : SQL.ofEndpointBefore;
      const rows = await db.all<EndpointDeliveryRow>(statement, params);
      return { deliveries: rows.slice(0, limit).map(toEndpointDelivery), more: rows.length > limit };
    },
    /** Deletes the deliveries of an endpoint deleted as they were enqueued. */
    discardOrphans: (endpointId: string) => changes(SQL.discardOrphans, { endpointId }),
    /** Failed deliveries, oldest first. */
    listFailed: async (options: { limit: number }): Promise<FailedDelivery[]> =>
      (await db.all<FailedRow>(SQL.listFailed, options)).map((row) => ({
        ...toDelivery(row),
        lastError: row.last_error,
        failedAt: toDate(row.updated_at),
      })),
    /** How many deliveries are in each state (counts every row: for `webhooks failed`). */
    counts: async () => {
      const counts = { pending: 0, delivered: 0, failed: 0 };
      for (const row of await db.all<{ status: keyof typeof counts; n: Integer }>(SQL.counts))
        counts[row.status] = Number(row.n);
      return counts;
    },
    /** Pending and failed deliveries, counted up to `cap`, so a metrics scrape costs the same at any size. */
    depth: async ({ cap }: { cap: number }) => {
      const [row] = await db.all<Record<'urls' | 'endpoints' | 'failed', Integer>>(SQL.depth, { cap });
      return {
        pending: Math.min(cap, Number(row!.urls) + Number(row!.endpoints)),
        failed: Number(row!.failed),
      };
    },
    /** Deletes deliveries delivered, or failed, more than `olderThanMs` ago; resolves with how many. */
    prune: (options: Prune) => changes(SQL.prune, options),
    pruneFailed: (options: Prune) => changes(SQL.pruneFailed, options),
    expire: async ({ endpointIds, urls, limit, ...options }) => {
      type Expired = { endpoint_id: string | null; url: string };
      const of = async (
        statement: typeof SQL.expireForUrls,
        keys: readonly string[],
        most: number,
      ): Promise<Expired[]> => {
        if (keys.length === 0 || most <= 0) return [];
        const params = { ...options, limit: most, keys: JSON.stringify(keys.map((key) => [key])) };
        return (await db.run<Expired>(statement, params)).rows;
      };
      const { expireForEndpoints, expireForUrls } = db.dialect === 'sqlite' ? SQL : POSTGRES;
      const rows = await of(expireForEndpoints, endpointIds, limit);
      rows.push(...(await of(expireForUrls, urls, limit - rows.length)));
      return rows.map((row) => (row.endpoint_id ? { endpointId: row.endpoint_id } : { url: row.url }));
    },
  };
}
