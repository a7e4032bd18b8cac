import { closeSync, fdatasync, fsyncSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import type { NewPlant } from '@plant-store/schema';
import Database from 'better-sqlite3';
import { makePrivate } from './private-files.ts';
import {
  type DeliveryRow,
  type EndpointDeliveryRow,
  type EndpointRow,
  type EndpointSummaryRow,
  type EventRow,
  type FailedRow,
  type PlantRow,
  type TokenRow,
  toDelivery,
  toEndpoint,
  toEndpointDelivery,
  toEndpointSummary,
  toEvent,
  toFailedDelivery,
  toPlant,
  toStoredToken,
  toTokenRecord,
} from './rows.ts';
import { migrateSqlite } from './sqlite/migrate.ts';
import {
  type ClaimOutcome,
  type Delivery,
  type DeliveryEvent,
  type DeliveryOutbox,
  disabledError,
  type EndpointDisabledReason,
  type EventLog,
  type IdempotencyKeyStore,
  type KeyClaim,
  KeyClaimLostError,
  type KeyedAnswer,
  type NewDelivery,
  PAGE_BUDGET_BYTES,
  type PlantStore,
  type StoredEndpoint,
  type StoredPlant,
  type StoredToken,
  StoreUnavailableError,
  type Subscriber,
  type TokenStore,
  textBytes,
  type WebhookEndpointStore,
} from './store.ts';

/** One write in a group commit; `apply` documents each one's result. */
type Write =
  | { create: NewPlant; outbox: readonly NewDelivery[]; answer?: KeyedAnswer; endpointPayload?: string }
  | { delete: bigint; answer?: KeyedAnswer }
  | { claimKey: KeyClaim & { fingerprint: string; inFlightMs: number; ttlMs: number } }
  | { releaseKey: KeyClaim }
  | { pruneKeys: { olderThanMs: number; limit: number } }
  | { claim: Subscriber & { limit: number; leaseMs: number } }
  | { prune: { olderThanMs: number; limit: number } }
  | { pruneFailed: { olderThanMs: number; limit: number } }
  | { pruneEvents: { olderThanMs: number; limit: number } }
  | { delivered: readonly string[]; responseCodes?: readonly number[] }
  | { release: readonly Pick<Delivery, 'id' | 'attempts'>[] }
  | { retry: { id: string; delayMs: number; error: string; responseCode?: number } }
  | { failed: { id: string; error: string; responseCode?: number } }
  | { enqueue: NewDelivery & { endpointId: string; event: DeliveryEvent }; maxPending: number }
  | { redeliver: { id: string; endpointId: string; maxPending: number } }
  | { discardOrphans: string }
  | { addEndpoint: Pick<StoredEndpoint, 'id' | 'owner' | 'url' | 'description' | 'secret'>; max: number }
  | { deleteEndpoint: { id: string; owner: string | undefined } }
  | { disableEndpoint: { id: string; reason: EndpointDisabledReason } }
  | { enableEndpoint: string }
  | { rotateEndpoint: { id: string; owner: string; secret: string; overlapMs: number } }
  | { addToken: StoredToken }
  | { revokeToken: string };
type PendingWrite = { write: Write; resolve: (result: unknown) => void; reject: (err: Error) => void };
/** A `plants` row read with `.raw()`: id, name, tag. */
type PlantTuple = [bigint, string, string | null];
type KeyRow = { fingerprint: string; status: bigint | null; body: string | null };
/** What a keyed create or delete answers when its request no longer holds the key. */
const CLAIM_LOST = Symbol('claim lost');

/**
 * The embedded store: an SQLite file in WAL mode, group-committed. The writes that arrive in one
 * turn of the event loop (creates, deletes, outbox and token updates) run as one transaction;
 * COMMIT appends them to the write-ahead log (synchronous=NORMAL: no fsync inside COMMIT), then the
 * log is fdatasync'd on libuv's thread pool and only then is each write answered: what
 * synchronous=FULL guarantees (a 200 survives a power cut), without blocking the event loop on the
 * disk. While that sync runs, new writes queue up for the next transaction, and reads wait for it,
 * so nobody ever sees data that is not yet durable. A duplicate id fails only its own create, and
 * enqueues none of the deliveries it was given.
 *
 * A failed COMMIT or log sync is fatal (see `failed`): the pages of a transaction whose sync failed
 * may be dropped by the kernel while a later sync reports success, so nothing this connection would
 * write or read afterwards can be trusted. The writes of that transaction and every later call are
 * rejected with `StoreUnavailableError` (so no 200 follows a failed sync), and only a new process,
 * recovering from what is on disk, serves again.
 */
export async function openSqliteStore(path: string): Promise<PlantStore> {
  makePrivate(path);
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  // Durability comes from the fdatasync of the log after each commit (see above), not from SQLite.
  db.pragma('synchronous = NORMAL');
  db.pragma('busy_timeout = 5000');
  db.defaultSafeIntegers(true);
  await migrateSqlite(db);
  // The log SQLite writes to; it keeps this file (the same inode) for as long as the connection is open.
  const wal = openSync(`${path}-wal`, 'a', 0o600);
  // Make the migrations and the log's directory entry durable once (a fresh file may not be).
  fsyncSync(wal);
  const dir = openSync(dirname(path), 'r');
  fsyncSync(dir);
  closeSync(dir);

  const selectOne = db.prepare<[bigint], PlantRow>('SELECT id, name, tag FROM plants WHERE id = ?');
  const selectFirst = db.prepare<[number], PlantRow>('SELECT id, name, tag FROM plants ORDER BY id LIMIT ?');
  const selectAfter = db.prepare<[bigint, number], PlantRow>(
    'SELECT id, name, tag FROM plants WHERE id > ? ORDER BY id LIMIT ?',
  );
  // The same pages as rows of [id, name, tag]: one call reads them all (see `list`).
  const selectFirstRaw = db.prepare<[number], PlantTuple>(selectFirst.source).raw(true);
  const selectAfterRaw = db.prepare<[bigint, number], PlantTuple>(selectAfter.source).raw(true);
  // What a page's name and tag text costs the budget (`textBytes`), summed by SQLite over the
  // page's id range: octet_length (the UTF-8 bytes, as Buffer.byteLength counts) of a column is read
  // from its row's header, so even a page of megabyte rows costs this no text reading.
  const PAGE_BYTES = 'coalesce(sum(octet_length(name) + coalesce(octet_length(tag), 0)), 0)';
  const firstPageBytes = db
    .prepare<{ limit: number }, bigint>(
      `SELECT ${PAGE_BYTES} FROM plants WHERE id <= coalesce(
         (SELECT id FROM plants ORDER BY id LIMIT 1 OFFSET @limit - 1), 9223372036854775807)`,
    )
    .pluck(true);
  const afterPageBytes = db
    .prepare<{ after: bigint; limit: number }, bigint>(
      `SELECT ${PAGE_BYTES} FROM plants WHERE id > @after AND id <= coalesce(
         (SELECT id FROM plants WHERE id > @after ORDER BY id LIMIT 1 OFFSET @limit - 1), 9223372036854775807)`,
    )
    .pluck(true);
  const selectFailed = db.prepare<[number], FailedRow>(
    `SELECT id, url, payload, attempts, created_at, last_error, updated_at FROM webhook_deliveries
     WHERE status = 'failed' ORDER BY created_at, id LIMIT ?`,
  );
  const selectTokens = db.prepare<[], TokenRow>(
    'SELECT name, digest, scopes, created_at, revoked_at FROM api_tokens ORDER BY name',
  );
  const countByStatus = db.prepare<[], { status: 'pending' | 'delivered' | 'failed'; n: bigint }>(
    'SELECT status, count(*) AS n FROM webhook_deliveries GROUP BY status',
  );
  // Each count walks at most `cap` entries of its partial index (pending: of each of the two).
  const countCapped = db.prepare<{ cap: number }, { pending: bigint; failed: bigint }>(`
    SELECT
      min(@cap,
        (SELECT count(*) FROM (SELECT 1 FROM webhook_deliveries WHERE status = 'pending' AND endpoint_id IS NULL ORDER BY url, next_attempt_at LIMIT @cap))
        + (SELECT count(*) FROM (SELECT 1 FROM webhook_deliveries WHERE status = 'pending' AND endpoint_id IS NOT NULL ORDER BY endpoint_id, next_attempt_at LIMIT @cap))) AS pending,
      (SELECT count(*) FROM (SELECT 1 FROM webhook_deliveries WHERE status = 'failed' ORDER BY created_at LIMIT @cap)) AS failed`);
  // A loose index scan: one probe of webhook_deliveries_due_by_url per distinct URL.
  const selectPendingUrls = db.prepare<{ limit: number }, { url: string }>(`
    WITH RECURSIVE urls (url) AS (
      SELECT min(url) FROM webhook_deliveries WHERE status = 'pending' AND endpoint_id IS NULL
      UNION ALL
      SELECT (SELECT min(url) FROM webhook_deliveries WHERE status = 'pending' AND endpoint_id IS NULL AND url > urls.url)
      FROM urls WHERE urls.url IS NOT NULL
      LIMIT @limit + 1
    )
    SELECT url FROM urls WHERE url IS NOT NULL LIMIT @limit`);
  // The same over webhook_deliveries_due_by_endpoint.
  const selectPendingEndpoints = db.prepare<{ limit: number }, { id: string }>(`
    WITH RECURSIVE endpoints (id) AS (
      SELECT min(endpoint_id) FROM webhook_deliveries WHERE status = 'pending' AND endpoint_id IS NOT NULL
      UNION ALL
      SELECT (SELECT min(endpoint_id) FROM webhook_deliveries
              WHERE status = 'pending' AND endpoint_id IS NOT NULL AND endpoint_id > endpoints.id)
      FROM endpoints WHERE endpoints.id IS NOT NULL
      LIMIT @limit + 1
    )
    SELECT id FROM endpoints WHERE id IS NOT NULL LIMIT @limit`);
  const selectDeliveryTime = db.prepare<[string, string], { created_at: bigint; rowid: bigint }>(
    'SELECT created_at, rowid FROM webhook_deliveries WHERE id = ? AND endpoint_id = ?',
  );
  const ENDPOINT_DELIVERY =
    'SELECT id, event, status, attempts, last_response_code, last_error, next_attempt_at, created_at FROM webhook_deliveries';
  const selectEndpointDeliveries = db.prepare<{ endpointId: string; limit: number }, EndpointDeliveryRow>(
    `${ENDPOINT_DELIVERY} WHERE endpoint_id = @endpointId ORDER BY created_at DESC, rowid DESC LIMIT @limit`,
  );
  const selectEndpointDeliveriesBefore = db.prepare<
    { endpointId: string; limit: number; createdAt: bigint; rowid: bigint },
    EndpointDeliveryRow
  >(
    `${ENDPOINT_DELIVERY} WHERE endpoint_id = @endpointId AND (created_at, rowid) < (@createdAt, @rowid)
     ORDER BY created_at DESC, rowid DESC LIMIT @limit`,
  );
  const ENDPOINT =
    'SELECT id, owner, url, description, secret, previous_secret, previous_secret_expires_at, created_at, disabled_at, disabled_reason FROM webhook_endpoints';
  const selectEndpoints = db.prepare<[string], EndpointRow>(
    `${ENDPOINT} WHERE owner = ? ORDER BY created_at, rowid`,
  );
  const selectEndpoint = db.prepare<[string], EndpointRow>(`${ENDPOINT} WHERE id = ?`);
  const SUMMARY = `
    SELECT e.id, e.owner, e.url, e.description, e.created_at, e.disabled_at, e.disabled_reason,
      (SELECT count(*) FROM webhook_deliveries AS d WHERE d.endpoint_id = e.id AND d.status = 'pending') AS pending,
      (SELECT count(*) FROM webhook_deliveries AS d WHERE d.endpoint_id = e.id AND d.status = 'failed') AS failed
    FROM webhook_endpoints AS e`;
  const selectSummaries = db.prepare<[], EndpointSummaryRow>(`${SUMMARY} ORDER BY e.created_at, e.rowid`);
  const selectOwnerSummaries = db.prepare<[string], EndpointSummaryRow>(
    `${SUMMARY} WHERE e.owner = ? ORDER BY e.created_at, e.rowid`,
  );
  const selectEvents = db.prepare<[bigint, number], EventRow>(
    'SELECT id, type, plant_id, name, tag, created_at FROM plant_events WHERE id > ? ORDER BY id LIMIT ?',
  );
  const selectEventHead = db.prepare<[], { head: bigint }>(
    'SELECT max(coalesce((SELECT max(id) FROM plant_events), 0), pruned_through) AS head FROM event_log WHERE id = 1',
  );
  const selectPrunedThrough = db.prepare<[], { pruned_through: bigint }>(
    'SELECT pruned_through FROM event_log WHERE id = 1',
  );
  const countEventsAfter = db.prepare<[bigint, number], { n: bigint }>(
    'SELECT count(*) AS n FROM (SELECT 1 FROM plant_events WHERE id > ? ORDER BY id LIMIT ?)',
  );
  const apply = writer(db);
  const applyAll = db.transaction((writes: Write[]) => writes.map(apply));

  let queued: PendingWrite[] = [];
  let scheduled = false;
  /** Resolves when the log sync in flight is done; `undefined` when none is. */
  let syncing: Promise<void> | undefined;
  let closing: Promise<void> | undefined;
  /** Set once a COMMIT or a log sync failed: the store then refuses everything, for good. */
  let fatal: StoreUnavailableError | undefined;
  let reportFailure: (error: Error) => void = () => {};
  /** Listeners of `events.watch`: told after each durable commit that may have appended events. */
  const watchers = new Set<() => void>();
  const failed = new Promise<Error>((resolve) => {
    reportFailure = resolve;
  });

  function fail(error: StoreUnavailableError): void {
    if (fatal) return;
    fatal = error;
    const waiting = queued;
    queued = [];
    for (const item of waiting) item.reject(error);
    reportFailure(error);
  }

  function schedule(): void {
    if (scheduled || syncing !== undefined || queued.length === 0) return;
    scheduled = true;
    setImmediate(flush);
  }

  function flush(): void {
    scheduled = false;
    const batch = queued;
    queued = [];
    let results: unknown[];
    try {
      results = applyAll(batch.map((item) => item.write));
    } catch (cause) {
      const error = new StoreUnavailableError('the writes could not be committed', { cause });
      for (const item of batch) item.reject(error);
      // Another process holding the write lock past busy_timeout: nothing was written, retry later.
      if (isLockError(cause)) schedule();
      else fail(error);
      return;
    }
    syncing = new Promise((done) =>
      fdatasync(wal, (cause) => {
        syncing = undefined;
        if (cause) {
          const error = new StoreUnavailableError('the write-ahead log could not be synced', { cause });
          for (const item of batch) item.reject(error);
          fail(error);
        } else {
          for (const [i, item] of batch.entries()) item.resolve(results[i]);
          if (batch.some(({ write }) => 'create' in write || 'delete' in write))
            for (const listener of watchers) listener();
        }
        done();
        schedule();
      }),
    );
  }

  function write<T>(change: Write): Promise<T> {
    if (fatal) return Promise.reject(fatal);
    if (closing) return Promise.reject(new StoreUnavailableError('store is closed'));
    return new Promise<T>((resolve, reject) => {
      queued.push({ write: change, resolve: resolve as (result: unknown) => void, reject });
      schedule();
    });
  }

  async function read<T>(query: () => T): Promise<T> {
    // Never show a write before it is durable: wait for the log sync in flight, if any.
    if (syncing) await syncing;
    // What a failed sync left in the page cache may not be on disk: show nothing more.
    if (fatal) throw fatal;
    try {
      if (closing) throw new Error('store is closed');
      return query();
    } catch (cause) {
      throw new StoreUnavailableError('the store could not be read', { cause });
    }
  }

  const deliveries: DeliveryOutbox = {
    claim: async (options) => (await write<DeliveryRow[]>({ claim: options })).map(toDelivery),
    pendingUrls: ({ limit }) => read(() => selectPendingUrls.all({ limit }).map((row) => row.url)),
    pendingEndpoints: ({ limit }) => read(() => selectPendingEndpoints.all({ limit }).map((row) => row.id)),
    markDelivered: (ids, responseCodes) => write({ delivered: ids, responseCodes }),
    release: (claims) => write({ release: claims }),
    retry: (id, options) => write({ retry: { id, ...options } }),
    markFailed: (id, error, responseCode) => write({ failed: { id, error, responseCode } }),
    enqueue: async (delivery, { maxPending }) => {
      const row = await write<EndpointDeliveryRow | 'full'>({ enqueue: delivery, maxPending });
      return row === 'full' ? row : toEndpointDelivery(row);
    },
    redeliver: async (options) => {
      const row = await write<EndpointDeliveryRow | 'full' | undefined>({ redeliver: options });
      return row === 'full' ? row : row && toEndpointDelivery(row);
    },
    listForEndpoint: ({ endpointId, limit, before }) =>
      read(() => {
        let rows: EndpointDeliveryRow[];
        if (before === undefined) rows = selectEndpointDeliveries.all({ endpointId, limit: limit + 1 });
        else {
          const cursor = selectDeliveryTime.get(before, endpointId);
          if (cursor === undefined) return undefined;
          rows = selectEndpointDeliveriesBefore.all({
            endpointId,
            limit: limit + 1,
            createdAt: cursor.created_at,
            rowid: cursor.rowid,
          });
        }
        return { deliveries: rows.slice(0, limit).map(toEndpointDelivery), more: rows.length > limit };
      }),
    discardOrphans: (endpointId) => write({ discardOrphans: endpointId }),
    listFailed: ({ limit }) => read(() => selectFailed.all(limit).map(toFailedDelivery)),
    counts: () =>
      read(() => {
        const counts = { pending: 0, delivered: 0, failed: 0 };
        for (const row of countByStatus.all()) counts[row.status] = Number(row.n);
        return counts;
      }),
    depth: ({ cap }) =>
      read(() => {
        const row = countCapped.get({ cap })!;
        return { pending: Number(row.pending), failed: Number(row.failed) };
      }),
    prune: (options) => write({ prune: options }),
    pruneFailed: (options) => write({ pruneFailed: options }),
  };

  const events: EventLog = {
    after: (after, limit) => read(() => selectEvents.all(after, limit).map(toEvent)),
    // Not max(id) alone: pruning every event must not move the head back.
    head: () => read(() => selectEventHead.get()!.head),
    prunedThrough: () => read(() => selectPrunedThrough.get()!.pruned_through),
    countAfter: (after, limit) => read(() => Number(countEventsAfter.get(after, limit)!.n)),
    prune: (options) => write({ pruneEvents: options }),
    watch(listener) {
      watchers.add(listener);
      return () => watchers.delete(listener);
    },
  };

  const idempotencyKeys: IdempotencyKeyStore = {
    claim: (options) => write({ claimKey: options }),
    release: (claim) => write({ releaseKey: claim }),
    prune: (options) => write({ pruneKeys: options }),
  };

  /** A keyed write's result, or `KeyClaimLostError` when its request no longer held the key. */
  async function keyed(change: Write): Promise<boolean> {
    const result = await write<boolean | typeof CLAIM_LOST>(change);
    if (result === CLAIM_LOST)
      throw new KeyClaimLostError('the Idempotency-Key was claimed by another request');
    return result;
  }

  const webhookEndpoints: WebhookEndpointStore = {
    create: async (endpoint, { maxPerOwner }) => {
      const row = await write<EndpointRow | undefined>({ addEndpoint: endpoint, max: maxPerOwner });
      return row === undefined ? false : toEndpoint(row);
    },
    list: (owner) => read(() => selectEndpoints.all(owner).map(toEndpoint)),
    get: (id, owner) =>
      read(() => {
        const row = selectEndpoint.get(id);
        return row === undefined || (owner !== undefined && row.owner !== owner)
          ? undefined
          : toEndpoint(row);
      }),
    delete: (id, owner) => write({ deleteEndpoint: { id, owner } }),
    disable: async (id, reason) => {
      const row = await write<EndpointRow | undefined>({ disableEndpoint: { id, reason } });
      return row && toEndpoint(row);
    },
    enable: async (id) => {
      const row = await write<EndpointRow | undefined>({ enableEndpoint: id });
      return row && toEndpoint(row);
    },
    rotate: async (id, owner, options) => {
      const row = await write<EndpointRow | undefined>({ rotateEndpoint: { id, owner, ...options } });
      return row && toEndpoint(row);
    },
    summaries: ({ owner }) =>
      read(() =>
        (owner === undefined ? selectSummaries.all() : selectOwnerSummaries.all(owner)).map(
          toEndpointSummary,
        ),
      ),
  };

  const tokens: TokenStore = {
    create: (token) => write({ addToken: token }),
    revoke: (name) => write({ revokeToken: name }),
    list: () => read(() => selectTokens.all().map(toTokenRecord)),
    active: () =>
      read(() =>
        selectTokens
          .all()
          .filter((row) => row.revoked_at === null)
          .map(toStoredToken),
      ),
  };

  return {
    create: (plant, outbox = [], answer, endpointPayload) =>
      answer
        ? keyed({ create: plant, outbox, answer, endpointPayload })
        : write({ create: plant, outbox, endpointPayload }),
    delete: (id, answer) => (answer ? keyed({ delete: id, answer }) : write({ delete: id })),
    get: (id) =>
      read(() => {
        const row = selectOne.get(id);
        return row && toPlant(row);
      }),
    list: ({ limit, after, maxBytes = PAGE_BUDGET_BYTES }) =>
      read(() => {
        // The usual page fits its budget: SQLite says so first (without reading the text out), then
        // one all() reads it, cheaper than stepping row by row.
        const text =
          after === undefined ? firstPageBytes.get({ limit })! : afterPageBytes.get({ after, limit })!;
        if (text <= maxBytes) {
          const rows =
            after === undefined ? selectFirstRaw.all(limit + 1) : selectAfterRaw.all(after, limit + 1);
          const plants: StoredPlant[] = [];
          for (let i = 0; i < rows.length && i < limit; i++) {
            const [id, name, tag] = rows[i]!;
            plants.push(tag === null ? { id, name } : { id, name, tag });
          }
          return { plants, more: rows.length > limit };
        }
        // Row by row, so a page stops reading once its budget is spent (all() would read `limit` rows).
        const rows =
          after === undefined ? selectFirst.iterate(limit + 1) : selectAfter.iterate(after, limit + 1);
        const plants: StoredPlant[] = [];
        let bytes = 0;
        for (const row of rows) {
          bytes += textBytes(row);
          // Leaving the loop ends the statement.
          if (plants.length === limit || (plants.length > 0 && bytes > maxBytes))
            return { plants, more: true };
          plants.push(toPlant(row));
        }
        return { plants, more: false };
      }),
    ping: () => read(() => undefined),
    deliveries,
    events,
    idempotencyKeys,
    tokens,
    webhookEndpoints,
    failed,
    close() {
      closing ??= (async () => {
        // Writes already accepted are committed and synced (and answered) before closing.
        while (syncing || queued.length > 0 || scheduled) {
          if (syncing) await syncing;
          else await new Promise((resolve) => setImmediate(resolve));
        }
        // Closing checkpoints the log into the database file: not after a failed sync, when the
        // log's pages in memory may not be what is on disk. Exiting leaves the recovery to SQLite.
        if (fatal) return;
        db.close();
        closeSync(wal);
      })();
      return closing;
    },
  };
}

/**
 * The write statements, and what each write answers: `{ create }` → whether it inserted (and then
 * enqueued its outbox); `{ delete }` → whether it deleted; `{ claim }` → the
 * leased deliveries; `{ prune }` → how many it deleted; `{ delivered | release | retry | failed }` → nothing; `{ addToken }` → whether it was
 * added; `{ revokeToken }` → how many endpoints it disabled, `undefined` when no active token was
 * revoked; `{ disableEndpoint | enableEndpoint }` → the endpoint's row, `undefined` when none. Outbox times are milliseconds
 * since the epoch; while an attempt runs, `next_attempt_at` is its lease's end.
 */
function writer(db: Database.Database): (write: Write) => unknown {
  const insert = db.prepare(
    'INSERT INTO plants (id, name, tag) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING',
  );
  const remove = db.prepare('DELETE FROM plants WHERE id = ?');
  const appendEvent = db.prepare(
    'INSERT INTO plant_events (type, plant_id, name, tag, created_at) VALUES (?, ?, ?, ?, ?)',
  );
  const pruneEvents = db.prepare<{ before: number; limit: number }, { id: bigint }>(`
    DELETE FROM plant_events WHERE id IN (
      SELECT id FROM plant_events WHERE created_at < @before ORDER BY id LIMIT @limit
    )
    RETURNING id`);
  const recordPruned = db.prepare(
    'UPDATE event_log SET pruned_through = max(pruned_through, ?) WHERE id = 1',
  );
  const enqueue = db.prepare(
    'INSERT INTO webhook_deliveries (id, url, payload, next_attempt_at, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)',
  );
  // One delivery per enabled endpoint, as the table holds them in this transaction.
  const fanOut = db.prepare<{ payload: string; now: number }>(`
    INSERT INTO webhook_deliveries (id, endpoint_id, url, event, payload, next_attempt_at, created_at, updated_at)
    SELECT 'msg_' || lower(hex(randomblob(16))), id, url, 'plant.created', @payload, @now, @now, @now
    FROM webhook_endpoints WHERE disabled_at IS NULL`);
  const claimOf = (where: string) =>
    db.prepare<{ subscriber: string; now: number; leaseEnd: number; limit: number }, DeliveryRow>(`
    UPDATE webhook_deliveries SET attempts = attempts + 1, next_attempt_at = @leaseEnd, updated_at = @now
    WHERE id IN (
      SELECT id FROM webhook_deliveries WHERE status = 'pending' AND ${where} AND next_attempt_at <= @now
      ORDER BY next_attempt_at LIMIT @limit
    )
    RETURNING id, url, payload, attempts, created_at, endpoint_id, event`);
  const claimForUrl = claimOf('endpoint_id IS NULL AND url = @subscriber');
  const claimForEndpoint = claimOf('endpoint_id = @subscriber');
  const ENDPOINT_DELIVERY_COLUMNS =
    'id, event, status, attempts, last_response_code, last_error, next_attempt_at, created_at';
  const enqueueToEndpoint = db.prepare<Record<string, unknown>, EndpointDeliveryRow>(`
    INSERT INTO webhook_deliveries (id, endpoint_id, url, event, payload, next_attempt_at, created_at, updated_at)
    VALUES (@id, @endpointId, @url, @event, @payload, @now, @now, @now)
    RETURNING ${ENDPOINT_DELIVERY_COLUMNS}`);
  const redeliver = db.prepare<{ id: string; endpointId: string; now: number }, EndpointDeliveryRow>(`
    UPDATE webhook_deliveries
    SET status = 'pending', attempts = 0, next_attempt_at = @now, last_error = NULL, last_response_code = NULL, updated_at = @now
    WHERE id = @id AND endpoint_id = @endpointId
    RETURNING ${ENDPOINT_DELIVERY_COLUMNS}`);
  // Reads at most `max` entries of webhook_deliveries_due_by_endpoint, however many are pending.
  const pendingOf = db
    .prepare<{ endpointId: string; max: number }, bigint>(
      `SELECT count(*) FROM (SELECT 1 FROM webhook_deliveries
       WHERE endpoint_id = @endpointId AND status = 'pending' LIMIT @max)`,
    )
    .pluck(true);
  const isDeliveryOf = db.prepare<[string, string], { one: bigint }>(
    'SELECT 1 AS one FROM webhook_deliveries WHERE id = ? AND endpoint_id = ?',
  );
  const discardOrphans = db.prepare<[string, string]>(
    'DELETE FROM webhook_deliveries WHERE endpoint_id = ? AND NOT EXISTS (SELECT 1 FROM webhook_endpoints WHERE id = ?)',
  );
  const ENDPOINT_COLUMNS =
    'id, owner, url, description, secret, previous_secret, previous_secret_expires_at, created_at, disabled_at, disabled_reason';
  const addEndpoint = db.prepare<Record<string, unknown>, EndpointRow>(`
    INSERT INTO webhook_endpoints (id, owner, url, description, secret, created_at)
    SELECT @id, @owner, @url, @description, @secret, @now
    WHERE (SELECT count(*) FROM webhook_endpoints WHERE owner = @owner) < @max
    RETURNING ${ENDPOINT_COLUMNS}`);
  const deleteEndpoint = db.prepare<{ id: string; owner: string | null }>(
    'DELETE FROM webhook_endpoints WHERE id = @id AND (@owner IS NULL OR owner = @owner)',
  );
  // An endpoint disabled already keeps its time and reason.
  const disableEndpoint = db.prepare<{ id: string; reason: string; now: number }, EndpointRow>(`
    UPDATE webhook_endpoints
    SET disabled_at = coalesce(disabled_at, @now), disabled_reason = coalesce(disabled_reason, @reason)
    WHERE id = @id
    RETURNING ${ENDPOINT_COLUMNS}`);
  const enableEndpoint = db.prepare<[string], EndpointRow>(`
    UPDATE webhook_endpoints SET disabled_at = NULL, disabled_reason = NULL WHERE id = ?
    RETURNING ${ENDPOINT_COLUMNS}`);
  const disableOwned = db.prepare<{ owner: string; now: number }, { id: string }>(`
    UPDATE webhook_endpoints SET disabled_at = @now, disabled_reason = 'token_revoked'
    WHERE owner = @owner AND disabled_at IS NULL
    RETURNING id`);
  const failPending = db.prepare<{ endpointId: string; error: string; now: number }>(`
    UPDATE webhook_deliveries SET status = 'failed', last_error = @error, updated_at = @now
    WHERE endpoint_id = @endpointId AND status = 'pending'`);
  const deleteEndpointDeliveries = db.prepare<[string]>(
    'DELETE FROM webhook_deliveries WHERE endpoint_id = ?',
  );
  const rotateEndpoint = db.prepare<Record<string, unknown>, EndpointRow>(`
    UPDATE webhook_endpoints
    SET previous_secret = secret, previous_secret_expires_at = @until, secret = @secret
    WHERE id = @id AND owner = @owner
    RETURNING ${ENDPOINT_COLUMNS}`);
  const prune = db.prepare<{ before: number; limit: number }>(`
    DELETE FROM webhook_deliveries WHERE id IN (
      SELECT id FROM webhook_deliveries WHERE status = 'delivered' AND updated_at < @before
      ORDER BY updated_at LIMIT @limit
    )`);
  const pruneFailed = db.prepare<{ before: number; limit: number }>(`
    DELETE FROM webhook_deliveries WHERE id IN (
      SELECT id FROM webhook_deliveries WHERE status = 'failed' AND updated_at < @before
      ORDER BY updated_at LIMIT @limit
    )`);
  // The ids (and their response codes) as one JSON array of pairs: one statement however many.
  const delivered = db.prepare<[number, string]>(`
    UPDATE webhook_deliveries SET status = 'delivered', updated_at = ?, last_response_code = outcome.code
    FROM (SELECT value ->> 0 AS id, value ->> 1 AS code FROM json_each(?)) AS outcome
    WHERE webhook_deliveries.id = outcome.id AND status = 'pending'`);
  const release = db.prepare<{ id: string; attempts: number; now: number }>(`
    UPDATE webhook_deliveries SET attempts = attempts - 1, next_attempt_at = @now, updated_at = @now
    WHERE id = @id AND status = 'pending' AND attempts = @attempts`);
  const retry = db.prepare(
    "UPDATE webhook_deliveries SET next_attempt_at = ?, last_error = ?, last_response_code = ?, updated_at = ? WHERE id = ? AND status = 'pending'",
  );
  const failed = db.prepare(
    "UPDATE webhook_deliveries SET status = 'failed', last_error = ?, last_response_code = ?, updated_at = ? WHERE id = ? AND status = 'pending'",
  );
  const addToken = db.prepare(
    'INSERT INTO api_tokens (name, digest, scopes, created_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING',
  );
  const revokeToken = db.prepare(
    'UPDATE api_tokens SET revoked_at = ? WHERE name = ? AND revoked_at IS NULL',
  );
  const keys = keyStatements(db);

  return (write) => {
    // A keyed change is made only while its request holds the key (the transaction holds the write
    // lock, so nobody takes it over in between), and its answer is stored with it.
    if ('create' in write) {
      if (write.answer && !keys.holds(write.answer)) return CLAIM_LOST;
      const { id, name, tag } = write.create;
      const created = insert.run(id, name, tag ?? null).changes === 1;
      if (created) {
        const now = Date.now();
        appendEvent.run('plant.created', id, name, tag ?? null, now);
        for (const delivery of write.outbox) {
          enqueue.run(delivery.id, delivery.url, delivery.payload, now, now, now);
        }
        if (write.endpointPayload !== undefined) fanOut.run({ payload: write.endpointPayload, now });
      }
      if (created && write.answer) keys.complete(write.answer);
      return created;
    }
    const now = Date.now();
    if ('delete' in write) {
      if (write.answer && !keys.holds(write.answer)) return CLAIM_LOST;
      const deleted = remove.run(write.delete).changes === 1;
      if (deleted) appendEvent.run('plant.deleted', write.delete, null, null, now);
      if (deleted && write.answer) keys.complete(write.answer);
      return deleted;
    }
    if ('pruneEvents' in write) {
      const gone = pruneEvents.all({
        before: now - write.pruneEvents.olderThanMs,
        limit: write.pruneEvents.limit,
      });
      let through = 0n;
      for (const row of gone) if (row.id > through) through = row.id;
      if (gone.length > 0) recordPruned.run(through);
      return gone.length;
    }
    if ('claimKey' in write) return keys.claim(write.claimKey, now);
    if ('releaseKey' in write) return keys.release(write.releaseKey);
    if ('pruneKeys' in write) return keys.prune(now - write.pruneKeys.olderThanMs, write.pruneKeys.limit);
    if ('claim' in write) {
      const { limit, leaseMs } = write.claim;
      const options = { now, leaseEnd: now + leaseMs, limit };
      return 'url' in write.claim
        ? claimForUrl.all({ subscriber: write.claim.url, ...options })
        : claimForEndpoint.all({ subscriber: write.claim.endpointId, ...options });
    }
    // The write lock makes each count and its change one step.
    const full = (endpointId: string, max: number) => pendingOf.get({ endpointId, max })! >= BigInt(max);
    if ('enqueue' in write) {
      const { id, endpointId, url, event, payload } = write.enqueue;
      if (full(endpointId, write.maxPending)) return 'full';
      return enqueueToEndpoint.get({ id, endpointId, url, event, payload, now });
    }
    if ('redeliver' in write) {
      const { id, endpointId, maxPending } = write.redeliver;
      if (isDeliveryOf.get(id, endpointId) === undefined) return undefined;
      if (full(endpointId, maxPending)) return 'full';
      return redeliver.get({ id, endpointId, now });
    }
    if ('discardOrphans' in write)
      return discardOrphans.run(write.discardOrphans, write.discardOrphans).changes;
    if ('addEndpoint' in write) {
      const { id, owner, url, description, secret } = write.addEndpoint;
      return addEndpoint.get({ id, owner, url, description, secret, now, max: write.max });
    }
    if ('deleteEndpoint' in write) {
      const { id, owner } = write.deleteEndpoint;
      const deleted = deleteEndpoint.run({ id, owner: owner ?? null }).changes === 1;
      if (deleted) deleteEndpointDeliveries.run(id);
      return deleted;
    }
    if ('disableEndpoint' in write) {
      const row = disableEndpoint.get({ ...write.disableEndpoint, now });
      if (row !== undefined)
        failPending.run({ endpointId: row.id, error: disabledError(row.disabled_reason!), now });
      return row;
    }
    if ('enableEndpoint' in write) return enableEndpoint.get(write.enableEndpoint);
    if ('rotateEndpoint' in write) {
      const { id, owner, secret, overlapMs } = write.rotateEndpoint;
      return rotateEndpoint.get({ id, owner, secret, until: now + overlapMs });
    }
    if ('prune' in write)
      return prune.run({ before: now - write.prune.olderThanMs, limit: write.prune.limit }).changes;
    if ('pruneFailed' in write) {
      const { olderThanMs, limit } = write.pruneFailed;
      return pruneFailed.run({ before: now - olderThanMs, limit }).changes;
    }
    if ('delivered' in write) {
      const codes = write.responseCodes;
      delivered.run(now, JSON.stringify(write.delivered.map((id, i) => [id, codes?.[i] ?? null])));
    } else if ('release' in write)
      for (const { id, attempts } of write.release) release.run({ id, attempts, now });
    else if ('retry' in write) {
      const { id, delayMs, error, responseCode } = write.retry;
      retry.run(now + delayMs, error, responseCode ?? null, now, id);
    } else if ('failed' in write) {
      const { id, error, responseCode } = write.failed;
      failed.run(error, responseCode ?? null, now, id);
    } else if ('addToken' in write) {
      const { name, digest, scopes } = write.addToken;
      return addToken.run(name, digest, scopes.join(','), now).changes === 1;
    } else {
      if (revokeToken.run(now, write.revokeToken).changes === 0) return undefined;
      const disabled = disableOwned.all({ owner: write.revokeToken, now });
      for (const { id } of disabled)
        failPending.run({ endpointId: id, error: disabledError('token_revoked'), now });
      return { endpointsDisabled: disabled.length };
    }
    return undefined;
  };
}

/**
 * The Idempotency-Key statements (times in milliseconds since the epoch). A claim takes the key
 * when its row is absent, expired (claimed before `ttlMs`) or, with the same fingerprint, left in
 * flight for longer than `inFlightMs`; otherwise it reads what holds the key, in the same write.
 */
function keyStatements(db: Database.Database) {
  const take = db.prepare<Record<string, unknown>, { claim: string }>(`
    INSERT INTO idempotency_keys (token_name, key, fingerprint, claim, claimed_at)
    VALUES (@tokenName, @key, @fingerprint, @claim, @now)
    ON CONFLICT (token_name, key) DO UPDATE
      SET fingerprint = excluded.fingerprint, claim = excluded.claim, claimed_at = excluded.claimed_at,
          status = NULL, body = NULL
      WHERE idempotency_keys.claimed_at < @expiredBefore
         OR (idempotency_keys.status IS NULL AND idempotency_keys.claimed_at < @staleBefore
             AND idempotency_keys.fingerprint = excluded.fingerprint)
    RETURNING claim`);
  const read = db.prepare<[string, string], KeyRow>(
    'SELECT fingerprint, status, body FROM idempotency_keys WHERE token_name = ? AND key = ?',
  );
  const holds = db.prepare<[string, string, string], { one: bigint }>(
    'SELECT 1 AS one FROM idempotency_keys WHERE token_name = ? AND key = ? AND claim = ? AND status IS NULL',
  );
  const complete = db.prepare(
    'UPDATE idempotency_keys SET status = ?, body = ? WHERE token_name = ? AND key = ? AND claim = ?',
  );
  const release = db.prepare(
    'DELETE FROM idempotency_keys WHERE token_name = ? AND key = ? AND claim = ? AND status IS NULL',
  );
  const prune = db.prepare<{ before: number; limit: number }>(`
    DELETE FROM idempotency_keys WHERE rowid IN (
      SELECT rowid FROM idempotency_keys WHERE claimed_at < @before ORDER BY claimed_at LIMIT @limit
    )`);
  return {
    claim(
      options: KeyClaim & { fingerprint: string; inFlightMs: number; ttlMs: number },
      now: number,
    ): ClaimOutcome {
      const { tokenName, key, fingerprint, claim, inFlightMs, ttlMs } = options;
      const taken = take.get({
        tokenName,
        key,
        fingerprint,
        claim,
        now,
        expiredBefore: now - ttlMs,
        staleBefore: now - inFlightMs,
      });
      if (taken !== undefined) return { state: 'claimed' };
      const row = read.get(tokenName, key)!;
      return row.status === null
        ? { state: 'in_flight', fingerprint: row.fingerprint }
        : {
            state: 'completed',
            fingerprint: row.fingerprint,
            answer: { status: Number(row.status), body: row.body },
          };
    },
    holds: ({ tokenName, key, claim }: KeyClaim) => holds.get(tokenName, key, claim) !== undefined,
    complete({ tokenName, key, claim, status, body }: KeyedAnswer): void {
      complete.run(status, body, tokenName, key, claim);
    },
    release({ tokenName, key, claim }: KeyClaim): void {
      release.run(tokenName, key, claim);
    },
    prune: (before: number, limit: number) => prune.run({ before, limit }).changes,
  };
}

/** SQLITE_BUSY or SQLITE_LOCKED (and their extended codes): another connection held the lock. */
function isLockError(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && /^SQLITE_(BUSY|LOCKED)/.test(code);
}
