import { currentTraceparent } from '../tracing/commit.ts';
import { type Db, statements, type Time, toDate } from './sql.ts';
import type {
  Delivery,
  DeliveryEvent,
  EndpointDelivery,
  FailedDelivery,
  NewDelivery,
  Prune,
  Subscriber,
} from './store.ts';

type Integer = number | bigint;
type DeliveryRow = { id: string; url: string; payload: string; attempts: Integer; created_at: Time } & {
  /** Read by claims only; NULL for WEBHOOK_URLS subscribers. */
  endpoint_id?: string | null;
  event?: DeliveryEvent;
  trace_context?: string | null;
};
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
  const { id, event, status, last_response_code: code } = row;
  return {
    id,
    event,
    status,
    attempts: Number(row.attempts),
    lastResponseCode: code === null ? null : Number(code),
    lastError: row.last_error,
    nextAttemptAt: status === 'pending' ? toDate(row.next_attempt_at) : null,
    createdAt: toDate(row.created_at),
  };
}

const ENDPOINT_DELIVERY =
  'id, event, status, attempts, last_response_code, last_error, next_attempt_at, created_at';
/**
 * A claim pushes `next_attempt_at` to the lease's end, which hides the delivery from later claims
 * until then; `{skip locked}` passes over rows another claim is taking right now.
 */
const claimOf = (subscriber: string) => `
  UPDATE webhook_deliveries SET attempts = attempts + 1, next_attempt_at = {now + @leaseMs}, updated_at = {now}
  WHERE id IN (SELECT id FROM webhook_deliveries WHERE status = 'pending' AND ${subscriber}
    AND next_attempt_at <= {now} ORDER BY next_attempt_at LIMIT @limit {skip locked})
  RETURNING id, url, payload, attempts, created_at, endpoint_id, event, trace_context`;
/**
 * The distinct values of `column` among pending deliveries, by a loose index scan: one probe of the
 * index `where` selects per value, however many deliveries each has (`n` ends the recursion).
 */
const pendingOf = (column: string, where: string) => `
  WITH RECURSIVE found (value, n) AS (
    SELECT min(${column}), 1 FROM webhook_deliveries WHERE status = 'pending' AND ${where}
    UNION ALL
    SELECT (SELECT min(${column}) FROM webhook_deliveries
            WHERE status = 'pending' AND ${where} AND ${column} > found.value), n + 1
    FROM found WHERE found.value IS NOT NULL AND n <= @limit
  )
  SELECT value FROM found WHERE value IS NOT NULL LIMIT @limit`;
/**
 * Whether endpoint `@endpointId` has fewer than `@maxPending` pending deliveries: reads at most that
 * many entries of webhook_deliveries_due_by_endpoint.
 */
const HAS_ROOM = `(SELECT count(*) FROM (SELECT 1 FROM webhook_deliveries
  WHERE endpoint_id = @endpointId AND status = 'pending' LIMIT @maxPending) AS p) < @maxPending`;
const OF_ENDPOINT = `SELECT ${ENDPOINT_DELIVERY} FROM webhook_deliveries WHERE endpoint_id = @endpointId`;
const NEWEST_FIRST = 'ORDER BY created_at DESC, {seq} DESC LIMIT @limit';
/** Oldest first, through the partial index of `status`; rows another instance is pruning are left to it. */
const pruneOf = (status: 'delivered' | 'failed') => `
  DELETE FROM webhook_deliveries WHERE id IN (SELECT id FROM webhook_deliveries
    WHERE status = '${status}' AND updated_at < {now - @olderThanMs} ORDER BY updated_at LIMIT @limit {skip locked})`;
/** Records an attempt's failure (`@error`, `@responseCode`) on a pending delivery, and `set`. */
const settle = (set: string) => `UPDATE webhook_deliveries SET ${set}, last_error = @error,
  last_response_code = @responseCode, updated_at = {now} WHERE id = @id AND status = 'pending'`;
/** Each count walks at most `@cap` entries of its partial index. */
const capped = (where: string, order: string) =>
  `(SELECT count(*) FROM (SELECT 1 FROM webhook_deliveries WHERE ${where} ORDER BY ${order} LIMIT @cap) AS c)`;

const SQL = statements('deliveries', {
  claimForUrl: claimOf('endpoint_id IS NULL AND url = @url'),
  claimForEndpoint: claimOf('endpoint_id = @endpointId'),
  // Through webhook_deliveries_due_by_url and webhook_deliveries_due_by_endpoint.
  pendingUrls: pendingOf('url', 'endpoint_id IS NULL'),
  pendingEndpoints: pendingOf('endpoint_id', 'endpoint_id IS NOT NULL'),
  // `@outcomes`: [id, response code] pairs in one JSON array, so one statement however many.
  delivered: `UPDATE webhook_deliveries SET status = 'delivered', updated_at = {now}, last_response_code = outcome.code
    FROM (SELECT value ->> 0 AS id, CAST(value ->> 1 AS INTEGER) AS code FROM {json @outcomes}) AS outcome
    WHERE webhook_deliveries.id = outcome.id AND status = 'pending'`,
  // `@claims`: [id, attempts its claim returned] pairs.
  release: `UPDATE webhook_deliveries SET attempts = attempts - 1, next_attempt_at = {now}, updated_at = {now}
    FROM (SELECT value ->> 0 AS id, CAST(value ->> 1 AS INTEGER) AS claimed FROM {json @claims}) AS claim
    WHERE webhook_deliveries.id = claim.id AND attempts = claim.claimed AND status = 'pending'`,
  retry: settle('next_attempt_at = {now + @delayMs}'),
  failed: settle("status = 'failed'"),
  enqueue: `
    INSERT INTO webhook_deliveries (id, endpoint_id, url, event, payload, trace_context, next_attempt_at, created_at, updated_at)
    SELECT @id, @endpointId, @url, @event, @payload, @traceContext, {now}, {now}, {now} WHERE ${HAS_ROOM}
    RETURNING ${ENDPOINT_DELIVERY}`,
  roomFor: `SELECT ${HAS_ROOM} AS room FROM webhook_deliveries WHERE id = @id AND endpoint_id = @endpointId`,
  // A traced redelivery's attempts link to it, an untraced one's still to what enqueued the delivery.
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
});

/**
 * The lock a ping or a redelivery holds while it counts an endpoint's pending deliveries and adds
 * one, so concurrent ones (on any instance) never pass WEBHOOK_PENDING_PER_ENDPOINT together: any
 * fixed int4 no other application takes. Creates' fan-out neither takes it nor is capped.
 */
const PENDING_LOCK_KEY = 723491774;

/**
 * The webhook outbox, the same on both stores: the deliveries table, which `create` fills (sqlite/,
 * postgres/) and the delivery worker drains. A delivery is pending until it is delivered or failed.
 * Claiming one leases it: no other claim (from any process sharing the store) sees it until the
 * lease ends; a worker that dies mid-attempt thus delays it by at most the lease. The settling calls
 * change only pending deliveries, so a late answer never undoes a delivered one.
 */
export function deliveryOutbox(db: Db) {
  const changes = async (...args: Parameters<Db['run']>) => (await db.run(...args)).changes;
  const done = async (...args: Parameters<Db['run']>) => void (await db.run(...args));
  const values = async (...args: Parameters<Db['all']>) =>
    (await db.all<{ value: string }>(...args)).map((row) => row.value);
  return {
    /**
     * Leases up to `limit` due pending deliveries to one subscriber for `leaseMs`, counting the
     * attempt, oldest due first: one subscriber at a time, so each gets its own share of the attempts.
     */
    claim: async (options: Subscriber & { limit: number; leaseMs: number }) => {
      const claimed = await db.run<DeliveryRow>(
        'url' in options ? SQL.claimForUrl : SQL.claimForEndpoint,
        options,
      );
      return claimed.rows.map(toDelivery);
    },
    /** The distinct operator URLs that have pending deliveries (due or not), at most `limit` of them. */
    pendingUrls: (options: { limit: number }) => values(SQL.pendingUrls, options),
    /** The distinct endpoints that have pending deliveries (due or not), at most `limit` of them. */
    pendingEndpoints: (options: { limit: number }) => values(SQL.pendingEndpoints, options),
    /**
     * Records these deliveries as delivered: one write however many, so outcomes keep up with creates.
     * `codes[i]`, when given, is the HTTP status that acknowledged `ids[i]`.
     */
    markDelivered: (ids: readonly string[], codes?: readonly number[]) =>
      done(SQL.delivered, { outcomes: JSON.stringify(ids.map((id, i) => [id, codes?.[i] ?? null])) }),
    /**
     * Hands claimed deliveries back unattempted (a worker that claimed more than it could start, at
     * shutdown or when a subscriber's breaker opened): due at once, and the claim's attempt uncounted.
     * Each is identified by its id and the `attempts` its claim returned; one claimed again since
     * (its lease ran out) is left as it is.
     */
    release: (claims: readonly Pick<Delivery, 'id' | 'attempts'>[]) =>
      done(SQL.release, { claims: JSON.stringify(claims.map((c) => [c.id, c.attempts])) }),
    /** Makes the delivery due again in `delayMs`, recording why this attempt failed (and its HTTP status, if any). */
    retry: (id: string, options: { delayMs: number; error: string; responseCode?: number }) =>
      done(SQL.retry, { id, ...options }),
    /** Stops retrying: the delivery is kept as failed, with the last attempt's error (and status). */
    markFailed: (id: string, error: string, responseCode?: number) =>
      done(SQL.failed, { id, error, responseCode }),
    /**
     * Enqueues one delivery to a registered endpoint (a ping): pending, due at once; `'full'`, adding
     * nothing, when the endpoint already has `maxPending` pending deliveries. The count and the insert
     * are one step for every process sharing the store (counted through the endpoint's due index, at
     * most `maxPending` entries read).
     */
    enqueue: (
      delivery: NewDelivery & { endpointId: string; event: DeliveryEvent },
      { maxPending }: { maxPending: number },
    ) => {
      const params = { ...delivery, maxPending, traceContext: currentTraceparent() };
      return db.transaction(async (tx): Promise<EndpointDelivery | 'full'> => {
        await tx.lock(PENDING_LOCK_KEY, delivery.endpointId);
        const [row] = (await tx.run<EndpointDeliveryRow>(SQL.enqueue, params)).rows;
        return row === undefined ? 'full' : toEndpointDelivery(row);
      });
    },
    /**
     * Makes an endpoint's delivery pending and due at once, whatever its status, with its attempts
     * counted afresh (and the last attempt's error and status cleared); `undefined` when the endpoint
     * has no delivery of that id, `'full'` (changing nothing) as for `enqueue`.
     */
    redeliver: (options: { id: string; endpointId: string; maxPending: number }) => {
      const params = { ...options, traceContext: currentTraceparent() };
      return db.transaction(async (tx): Promise<EndpointDelivery | 'full' | undefined> => {
        await tx.lock(PENDING_LOCK_KEY, options.endpointId);
        const [found] = (await tx.run<{ room: unknown }>(SQL.roomFor, options)).rows;
        if (found === undefined) return undefined;
        if (!found.room) return 'full';
        return toEndpointDelivery((await tx.run<EndpointDeliveryRow>(SQL.redeliver, params)).rows[0]!);
      });
    },
    /**
     * An endpoint's deliveries, newest first (by enqueue time, then id), at most `limit`, strictly
     * before the delivery `before` when given; `undefined` when `before` is not one of its deliveries.
     */
    listForEndpoint: async ({
      endpointId,
      limit,
      before,
    }: {
      endpointId: string;
      limit: number;
      before?: string;
    }) => {
      const params = { endpointId, before, limit: limit + 1 };
      if (before !== undefined && (await db.all(SQL.isOfEndpoint, params)).length === 0) return undefined;
      const rows = await db.all<EndpointDeliveryRow>(
        before === undefined ? SQL.ofEndpoint : SQL.ofEndpointBefore,
        params,
      );
      return { deliveries: rows.slice(0, limit).map(toEndpointDelivery), more: rows.length > limit };
    },
    /** Deletes the pending deliveries of an endpoint that no longer exists (enqueued as it was deleted). */
    discardOrphans: (endpointId: string) => changes(SQL.discardOrphans, { endpointId }),
    /** Failed deliveries (that used up their attempts), oldest first. */
    listFailed: async (options: { limit: number }): Promise<FailedDelivery[]> => {
      const rows = await db.all<DeliveryRow & { last_error: string; updated_at: Time }>(
        SQL.listFailed,
        options,
      );
      return rows.map((row) => ({
        ...toDelivery(row),
        lastError: row.last_error,
        failedAt: toDate(row.updated_at),
      }));
    },
    /** How many deliveries are in each state: counts every row, for the `webhooks failed` command. */
    counts: async () => {
      const counts = { pending: 0, delivered: 0, failed: 0 };
      for (const row of await db.all<{ status: keyof typeof counts; n: Integer }>(SQL.counts))
        counts[row.status] = Number(row.n);
      return counts;
    },
    /**
     * Pending and failed deliveries, each counted up to `cap` only (through their partial indexes), so
     * that a metrics scrape costs the same however large the outbox is.
     */
    depth: async ({ cap }: { cap: number }) => {
      const [row] = await db.all<Record<'urls' | 'endpoints' | 'failed', Integer>>(SQL.depth, { cap });
      return {
        pending: Math.min(cap, Number(row!.urls) + Number(row!.endpoints)),
        failed: Number(row!.failed),
      };
    },
    /** Deletes deliveries delivered more than `olderThanMs` ago (see `Prune`); resolves with how many. */
    prune: (options: Prune) => changes(SQL.prune, options),
    /** The same for deliveries that failed more than `olderThanMs` ago. */
    pruneFailed: (options: Prune) => changes(SQL.pruneFailed, options),
  };
}
