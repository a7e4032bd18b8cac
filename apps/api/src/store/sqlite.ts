import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { Worker } from 'node:worker_threads';
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

/** A write for the writer thread (sqlite-writer.mjs), which documents each one's result. */
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
/** Rows as the writer answers them (plain numbers: it does not use safe integers). */
type ClaimedRow = { id: string; url: string; payload: string; attempts: number; created_at: number };
type FailedRow = {
  id: string;
  url: string;
  payload: string;
  attempts: bigint;
  created_at: bigint;
  last_error: string;
  updated_at: bigint;
};
type WriterAnswer = { results: unknown[] } | { error: string };

/**
 * The embedded store: an SQLite file in WAL mode. Writes are group-committed by a writer thread
 * (sqlite-writer.mjs): the writes of one event-loop turn are posted as a batch, and the writer
 * commits all batches that queued up while its last COMMIT was being fsync'd in one transaction.
 * Each write is answered only after its batch's COMMIT was fsync'd; a duplicate id fails only its
 * own create. Reads use a separate connection on this thread. With `webhookUrls`, each create also
 * enqueues one webhook delivery per URL in the same transaction.
 */
export function openSqliteStore(path: string, webhookUrls: readonly string[] = []): PlantStore {
  mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma('busy_timeout = 5000');
  db.defaultSafeIntegers(true);
  migrate(db);

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

  const writer = new Worker(new URL('./sqlite-writer.mjs', import.meta.url), {
    workerData: { path, webhookUrls: [...webhookUrls] },
  });
  let queued: PendingWrite[] = [];
  // Batches posted to the writer, oldest first; it answers them in order.
  const inFlight: PendingWrite[][] = [];
  let scheduled = false;
  let failure: Error | undefined;
  let closing: Promise<void> | undefined;
  let drained: (() => void) | undefined;

  function dispatch(): void {
    scheduled = false;
    if (queued.length === 0) return;
    inFlight.push(queued);
    writer.postMessage(queued.map((item) => item.write));
    queued = [];
  }

  writer.on('message', (answer: WriterAnswer) => {
    const batch = inFlight.shift() ?? [];
    if ('results' in answer) {
      for (const [i, item] of batch.entries()) item.resolve(answer.results[i]);
    } else {
      const error = new StoreUnavailableError(`the batch could not be committed (${answer.error})`);
      for (const item of batch) item.reject(error);
    }
    if (inFlight.length === 0 && drained) drained();
  });
  writer.on('error', (cause) => fail(new StoreUnavailableError('the SQLite writer failed', { cause })));
  writer.on('exit', () => fail(new StoreUnavailableError('the SQLite writer stopped')));

  function fail(error: Error): void {
    failure ??= error;
    for (const item of [...inFlight.flat(), ...queued]) item.reject(failure);
    inFlight.length = 0;
    queued = [];
    drained?.();
  }

  function read<T>(query: () => T): Promise<T> {
    try {
      if (closing) throw new Error('store is closed');
      return Promise.resolve(query());
    } catch (cause) {
      return Promise.reject(new StoreUnavailableError('the store could not be read', { cause }));
    }
  }

  function write<T>(change: Write): Promise<T> {
    if (failure || closing) return Promise.reject(failure ?? new StoreUnavailableError('store is closed'));
    return new Promise<T>((resolve, reject) => {
      queued.push({ write: change, resolve: resolve as (result: unknown) => void, reject });
      if (!scheduled) {
        scheduled = true;
        setImmediate(dispatch);
      }
    });
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
        if (!failure && (inFlight.length > 0 || queued.length > 0)) {
          await new Promise<void>((resolve) => {
            drained = resolve;
            dispatch();
          });
        }
        writer.removeAllListeners('exit');
        const exited = new Promise((resolve) => writer.once('exit', resolve));
        writer.postMessage('close');
        await exited;
        db.close();
      })();
      return closing;
    },
  };
}

function toDelivery(row: ClaimedRow): Delivery {
  return {
    id: row.id,
    url: row.url,
    payload: row.payload,
    attempts: row.attempts,
    createdAt: new Date(row.created_at),
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
  return {
    id: row.id,
    url: row.url,
    payload: row.payload,
    attempts: Number(row.attempts),
    createdAt: new Date(Number(row.created_at)),
    lastError: row.last_error,
    failedAt: new Date(Number(row.updated_at)),
  };
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
