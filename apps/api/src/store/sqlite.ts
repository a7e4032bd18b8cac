import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { NewPlant } from '@plant-store/schema';
import Database from 'better-sqlite3';
import { sqliteMigrations } from './sqlite-migrations.ts';
import { type PlantStore, type StoredPlant, StoreUnavailableError } from './store.ts';

type PendingCreate = { plant: NewPlant; resolve: (created: boolean) => void; reject: (err: Error) => void };
type Row = { id: bigint; name: string; tag: string | null };

/**
 * The embedded store. Creates are group-committed: every create that arrives in one turn of the
 * event loop is inserted in one transaction, and each is answered only after that transaction's
 * COMMIT has been fsync'd (WAL with synchronous=FULL). A duplicate id fails only its own create.
 */
export function openSqliteStore(path: string): PlantStore {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.pragma('busy_timeout = 5000');
  db.defaultSafeIntegers(true);
  migrate(db);

  const insert = db.prepare('INSERT INTO plants (id, name, tag) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING');
  const selectOne = db.prepare<[bigint], Row>('SELECT id, name, tag FROM plants WHERE id = ?');
  const selectFirst = db.prepare<[number], Row>('SELECT id, name, tag FROM plants ORDER BY id LIMIT ?');
  const selectAfter = db.prepare<[bigint, number], Row>(
    'SELECT id, name, tag FROM plants WHERE id > ? ORDER BY id LIMIT ?',
  );
  const insertBatch = db.transaction((plants: NewPlant[]) =>
    plants.map((p) => insert.run(p.id, p.name, p.tag ?? null).changes === 1),
  );

  let pending: PendingCreate[] = [];
  let closed = false;

  function flush(): void {
    const batch = pending;
    pending = [];
    let created: boolean[];
    try {
      created = insertBatch(batch.map((item) => item.plant));
    } catch (cause) {
      const error = new StoreUnavailableError('the plant could not be committed', { cause });
      for (const item of batch) item.reject(error);
      return;
    }
    batch.forEach((item, i) => item.resolve(created[i]!));
  }

  function guard<T>(read: () => T): Promise<T> {
    try {
      if (closed) throw new Error('store is closed');
      return Promise.resolve(read());
    } catch (cause) {
      return Promise.reject(new StoreUnavailableError('the store could not be read', { cause }));
    }
  }

  return {
    create(plant) {
      if (closed) return Promise.reject(new StoreUnavailableError('store is closed'));
      return new Promise((resolve, reject) => {
        if (pending.push({ plant, resolve, reject }) === 1) setImmediate(flush);
      });
    },
    get: (id) => guard(() => toPlant(selectOne.get(id))),
    list: ({ limit, after }) =>
      guard(() =>
        (after === undefined ? selectFirst.all(limit) : selectAfter.all(after, limit)).map((row) => toPlant(row)!),
      ),
    ping: () => guard(() => undefined),
    async close() {
      if (closed) return;
      if (pending.length > 0) flush();
      closed = true;
      db.close();
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
