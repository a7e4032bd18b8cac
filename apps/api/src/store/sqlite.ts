import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { NewPlant } from '@plant-store/schema';
import Database from 'better-sqlite3';
import { sqliteMigrations } from './sqlite-migrations.ts';
import { type PlantStore, type StoredPlant, StoreUnavailableError } from './store.ts';

/** A write for the writer thread (sqlite-writer.mjs). */
type Write = { create: NewPlant } | { delete: bigint };
type PendingWrite = { write: Write; resolve: (changed: boolean) => void; reject: (err: Error) => void };
type Row = { id: bigint; name: string; tag: string | null };
type WriterAnswer = { changed: boolean[] } | { failed: string };

/**
 * The embedded store: an SQLite file in WAL mode. Writes are group-committed by a writer thread
 * (sqlite-writer.mjs): the writes of one event-loop turn are posted as a batch, and the writer
 * commits all batches that queued up while its last COMMIT was being fsync'd in one transaction.
 * Each write is answered only after its batch's COMMIT was fsync'd; a duplicate id fails only its
 * own create. Reads use a separate connection on this thread.
 */
export function openSqliteStore(path: string): PlantStore {
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

  const writer = new Worker(new URL('./sqlite-writer.mjs', import.meta.url), { workerData: { path } });
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
    if ('changed' in answer) {
      for (const [i, item] of batch.entries()) item.resolve(answer.changed[i]!);
    } else {
      const error = new StoreUnavailableError(`the batch could not be committed (${answer.failed})`);
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

  function write(change: Write): Promise<boolean> {
    if (failure || closing) return Promise.reject(failure ?? new StoreUnavailableError('store is closed'));
    return new Promise((resolve, reject) => {
      queued.push({ write: change, resolve, reject });
      if (!scheduled) {
        scheduled = true;
        setImmediate(dispatch);
      }
    });
  }

  return {
    create: (plant) => write({ create: plant }),
    delete: (id) => write({ delete: id }),
    get: (id) => read(() => toPlant(selectOne.get(id))),
    list: ({ limit, after }) =>
      read(() =>
        (after === undefined ? selectFirst.all(limit) : selectAfter.all(after, limit)).map(
          (row) => toPlant(row)!,
        ),
      ),
    ping: () => read(() => undefined),
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
