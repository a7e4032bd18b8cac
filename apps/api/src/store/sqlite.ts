import { closeSync, fdatasync, fsyncSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import type { NewPlant } from '@plant-store/schema';
import Database from 'better-sqlite3';
import { newPlantPayload, newWebhookId } from '../webhooks/event.ts';
import { sqliteMigrations } from './sqlite-migrations.ts';
import {
  type Delivery,
  type DeliveryOutbox,
  type FailedDelivery,
  type PlantStore,
  parseScopes,
  type StoredPlant,
  type StoredToken,
  StoreUnavailableError,
  type TokenRecord,
  type TokenStore,
} from './store.ts';

/** One write in a group commit; `apply` documents each one's result. */
type Write =
  | { create: NewPlant; deliveries?: { ids: string[]; payload: string } }
  | { delete: bigint }
  | { claim: { limit: number; leaseMs: number } }
  | { delivered: string }
  | { retry: { id: string; delayMs: number; error: string } }
  | { failed: { id: string; error: string } }
  | { addToken: StoredToken }
  | { revokeToken: string };
type TokenRow = {
  name: string;
  digest: string;
  scopes: string;
  created_at: bigint;
  revoked_at: bigint | null;
};
type PendingWrite = { write: Write; resolve: (result: unknown) => void; reject: (err: Error) => void };
type Row = { id: bigint; name: string; tag: string | null };
type ClaimedRow = { id: string; url: string; payload: string; attempts: bigint; created_at: bigint };
type FailedRow = ClaimedRow & { last_error: string; updated_at: bigint };

/**
 * The embedded store: an SQLite file in WAL mode, group-committed. The writes that arrive in one
 * turn of the event loop (creates, deletes, outbox and token updates) run as one transaction;
 * COMMIT appends them to the write-ahead log (synchronous=NORMAL: no fsync inside COMMIT), then the
 * log is fdatasync'd on libuv's thread pool and only then is each write answered: what
 * synchronous=FULL guarantees (a 200 survives a power cut), without blocking the event loop on the
 * disk. While that sync runs, new writes queue up for the next transaction, and reads wait for it,
 * so nobody ever sees data that is not yet durable. A duplicate id fails only its own create. With
 * `webhookUrls`, each create also enqueues one webhook delivery per URL in the same transaction.
 */
export function openSqliteStore(path: string, webhookUrls: readonly string[] = []): PlantStore {
  mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  // Durability comes from the fdatasync of the log after each commit (see above), not from SQLite.
  db.pragma('synchronous = NORMAL');
  db.pragma('busy_timeout = 5000');
  db.defaultSafeIntegers(true);
  migrate(db);
  // The log SQLite writes to; it keeps this file (the same inode) for as long as the connection is open.
  const wal = openSync(`${path}-wal`, 'a');
  // Make the migrations and the log's directory entry durable once (a fresh file may not be).
  fsyncSync(wal);
  const dir = openSync(dirname(path), 'r');
  fsyncSync(dir);
  closeSync(dir);

  const selectOne = db.prepare<[bigint], Row>('SELECT id, name, tag FROM plants WHERE id = ?');
  const selectFirst = db.prepare<[number], Row>('SELECT id, name, tag FROM plants ORDER BY id LIMIT ?');
  const selectAfter = db.prepare<[bigint, number], Row>(
    'SELECT id, name, tag FROM plants WHERE id > ? ORDER BY id LIMIT ?',
  );
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
  const apply = writer(db, webhookUrls);
  const applyAll = db.transaction((writes: Write[]) => writes.map(apply));

  let queued: PendingWrite[] = [];
  let scheduled = false;
  /** Resolves when the log sync in flight is done; `undefined` when none is. */
  let syncing: Promise<void> | undefined;
  let closing: Promise<void> | undefined;

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
      schedule();
      return;
    }
    syncing = new Promise((done) =>
      fdatasync(wal, (cause) => {
        syncing = undefined;
        if (cause) {
          const error = new StoreUnavailableError('the write-ahead log could not be synced', { cause });
          for (const item of batch) item.reject(error);
        } else {
          for (const [i, item] of batch.entries()) item.resolve(results[i]);
        }
        done();
        schedule();
      }),
    );
  }

  function write<T>(change: Write): Promise<T> {
    if (closing) return Promise.reject(new StoreUnavailableError('store is closed'));
    return new Promise<T>((resolve, reject) => {
      queued.push({ write: change, resolve: resolve as (result: unknown) => void, reject });
      schedule();
    });
  }

  async function read<T>(query: () => T): Promise<T> {
    // Never show a write before it is durable: wait for the log sync in flight, if any.
    if (syncing) await syncing;
    try {
      if (closing) throw new Error('store is closed');
      return query();
    } catch (cause) {
      throw new StoreUnavailableError('the store could not be read', { cause });
    }
  }

  const deliveries: DeliveryOutbox = {
    claim: async (options) => (await write<ClaimedRow[]>({ claim: options })).map(toDelivery),
    markDelivered: (id) => write({ delivered: id }),
    retry: (id, { delayMs, error }) => write({ retry: { id, delayMs, error } }),
    markFailed: (id, error) => write({ failed: { id, error } }),
    listFailed: ({ limit }) => read(() => selectFailed.all(limit).map(toFailedDelivery)),
    counts: () =>
      read(() => {
        const counts = { pending: 0, delivered: 0, failed: 0 };
        for (const row of countByStatus.all()) counts[row.status] = Number(row.n);
        return counts;
      }),
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
          .map((row) => ({ name: row.name, digest: row.digest, scopes: parseScopes(row.scopes) })),
      ),
  };

  return {
    create: (plant) =>
      write(
        webhookUrls.length === 0
          ? { create: plant }
          : {
              create: plant,
              deliveries: { ids: webhookUrls.map(newWebhookId), payload: newPlantPayload(plant) },
            },
      ),
    delete: (id) => write({ delete: id }),
    get: (id) => read(() => toPlant(selectOne.get(id))),
    list: ({ limit, after }) =>
      read(() =>
        (after === undefined ? selectFirst.all(limit) : selectAfter.all(after, limit)).map(
          (row) => toPlant(row)!,
        ),
      ),
    ping: () => read(() => undefined),
    deliveries,
    tokens,
    close() {
      closing ??= (async () => {
        // Writes already accepted are committed and synced (and answered) before closing.
        while (syncing || queued.length > 0 || scheduled) {
          if (syncing) await syncing;
          else await new Promise((resolve) => setImmediate(resolve));
        }
        db.close();
        closeSync(wal);
      })();
      return closing;
    },
  };
}

/**
 * The write statements, and what each write answers: `{ create }` → whether it inserted (and then
 * enqueued one delivery per webhook URL); `{ delete }` → whether it deleted; `{ claim }` → the
 * leased deliveries; `{ delivered | retry | failed }` → nothing; `{ addToken }` → whether it was
 * added; `{ revokeToken }` → whether an active token was revoked. Outbox times are milliseconds
 * since the epoch; while an attempt runs, `next_attempt_at` is its lease's end.
 */
function writer(db: Database.Database, webhookUrls: readonly string[]): (write: Write) => unknown {
  const insert = db.prepare(
    'INSERT INTO plants (id, name, tag) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING',
  );
  const remove = db.prepare('DELETE FROM plants WHERE id = ?');
  const enqueue = db.prepare(
    'INSERT INTO webhook_deliveries (id, url, payload, next_attempt_at, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)',
  );
  const claim = db.prepare<{ now: number; leaseEnd: number; limit: number }, ClaimedRow>(`
    UPDATE webhook_deliveries SET attempts = attempts + 1, next_attempt_at = @leaseEnd, updated_at = @now
    WHERE id IN (
      SELECT id FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at <= @now
      ORDER BY next_attempt_at LIMIT @limit
    )
    RETURNING id, url, payload, attempts, created_at`);
  const delivered = db.prepare(
    "UPDATE webhook_deliveries SET status = 'delivered', updated_at = ? WHERE id = ? AND status = 'pending'",
  );
  const retry = db.prepare(
    "UPDATE webhook_deliveries SET next_attempt_at = ?, last_error = ?, updated_at = ? WHERE id = ? AND status = 'pending'",
  );
  const failed = db.prepare(
    "UPDATE webhook_deliveries SET status = 'failed', last_error = ?, updated_at = ? WHERE id = ? AND status = 'pending'",
  );
  const addToken = db.prepare(
    'INSERT INTO api_tokens (name, digest, scopes, created_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING',
  );
  const revokeToken = db.prepare(
    'UPDATE api_tokens SET revoked_at = ? WHERE name = ? AND revoked_at IS NULL',
  );

  return (write) => {
    if ('create' in write) {
      const { id, name, tag } = write.create;
      const created = insert.run(id, name, tag ?? null).changes === 1;
      if (created && write.deliveries) {
        const now = Date.now();
        for (const [i, url] of webhookUrls.entries()) {
          enqueue.run(write.deliveries.ids[i], url, write.deliveries.payload, now, now, now);
        }
      }
      return created;
    }
    if ('delete' in write) return remove.run(write.delete).changes === 1;
    const now = Date.now();
    if ('claim' in write)
      return claim.all({ now, leaseEnd: now + write.claim.leaseMs, limit: write.claim.limit });
    if ('delivered' in write) delivered.run(now, write.delivered);
    else if ('retry' in write) retry.run(now + write.retry.delayMs, write.retry.error, now, write.retry.id);
    else if ('failed' in write) failed.run(write.failed.error, now, write.failed.id);
    else if ('addToken' in write) {
      const { name, digest, scopes } = write.addToken;
      return addToken.run(name, digest, scopes.join(','), now).changes === 1;
    } else return revokeToken.run(now, write.revokeToken).changes === 1;
    return undefined;
  };
}

function toDelivery(row: ClaimedRow): Delivery {
  return {
    id: row.id,
    url: row.url,
    payload: row.payload,
    attempts: Number(row.attempts),
    createdAt: new Date(Number(row.created_at)),
  };
}

function toTokenRecord(row: TokenRow): TokenRecord {
  return {
    name: row.name,
    scopes: parseScopes(row.scopes),
    createdAt: new Date(Number(row.created_at)),
    revokedAt: row.revoked_at === null ? undefined : new Date(Number(row.revoked_at)),
  };
}

function toFailedDelivery(row: FailedRow): FailedDelivery {
  return { ...toDelivery(row), lastError: row.last_error, failedAt: new Date(Number(row.updated_at)) };
}

function toPlant(row: Row | undefined): StoredPlant | undefined {
  if (row === undefined) return undefined;
  return row.tag === null ? { id: row.id, name: row.name } : { id: row.id, name: row.name, tag: row.tag };
}

function migrate(db: Database.Database): void {
  db.exec(
    'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)',
  );
  const apply = db.transaction(() => {
    const applied = new Set(
      db
        .prepare<[], { version: bigint }>('SELECT version FROM schema_migrations')
        .all()
        .map((row) => Number(row.version)),
    );
    for (const migration of sqliteMigrations) {
      if (applied.has(migration.version)) continue;
      db.exec(migration.sql);
      db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(
        migration.version,
        migration.name,
        new Date().toISOString(),
      );
    }
  });
  // IMMEDIATE takes the write lock first, so two processes starting together apply each version once.
  apply.immediate();
}
