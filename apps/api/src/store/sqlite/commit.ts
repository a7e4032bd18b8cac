import { closeSync, fdatasync, fsyncSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import { groupCommit } from '../group-commit.ts';
import type { Db, Params, Result, Statement, Tx } from '../sql.ts';
import { StoreUnavailableError } from '../store.ts';
import { type Connection, executor } from './connection.ts';

/** A transaction of the group commit; `exec` runs a statement at once, for writes that need no await. */
export type SqliteTx = Tx & { exec<R = unknown>(statement: Statement, params?: Params): Result<R> };

/** A queued write: its statements, and whether it may append events (`watch` hears of its commit). */
type Write = {
  work: (tx: SqliteTx) => unknown;
  appends: boolean;
  resolve: (result: unknown) => void;
  reject: (error: Error) => void;
};

/**
 * The SQLite store's commit path, on one connection in WAL mode with synchronous=NORMAL (no fsync
 * inside COMMIT). The writes of one group commit run as one transaction; COMMIT appends them to the
 * write-ahead log, then the log is fdatasync'd on libuv's thread pool and only then is each write
 * answered: what synchronous=FULL guarantees (a 200 survives a power cut), without blocking the
 * event loop on the disk. While that commit and sync run, new writes queue up for the next
 * transaction, and reads wait for them, so nobody ever sees data that is not yet durable.
 *
 * A failed COMMIT or log sync is fatal (see `PlantStore.failed`): the pages of a transaction whose
 * sync failed may be dropped by the kernel while a later sync reports success, so nothing this
 * connection would write or read afterwards can be trusted. The writes of that transaction and every
 * later call are rejected with `StoreUnavailableError` (so no 200 follows a failed sync), and only a
 * new process, recovering from what is on disk, serves again.
 */
export function sqliteCommit(db: Connection, path: string) {
  // The log SQLite writes to; it keeps this file (the same inode) for as long as the connection is open.
  const wal = openSync(`${path}-wal`, 'a', 0o600);
  // Make the migrations and the log's directory entry durable once (a fresh file may not be).
  fsyncSync(wal);
  const dir = openSync(dirname(path), 'r');
  fsyncSync(dir);
  closeSync(dir);

  const execute = executor(db);
  const [begin, commitTransaction, rollback] = ['BEGIN IMMEDIATE', 'COMMIT', 'ROLLBACK'].map((sql) =>
    db.prepare(sql),
  );
  const writes = groupCommit(commit, { system: 'sqlite' });
  let closing: Promise<void> | undefined;
  /** Set once a COMMIT or a log sync failed: the store then refuses everything, for good. */
  let fatal: StoreUnavailableError | undefined;
  let reportFailure: (error: Error) => void = () => {};
  const failed = new Promise<Error>((resolve) => {
    reportFailure = resolve;
  });
  /** Listeners of `events.watch`: told after each durable commit that may have appended events. */
  const watchers = new Set<() => void>();

  /** Rejects `batch` and, from the first failure on, every call: throws `error` for the group commit. */
  function fail(error: StoreUnavailableError, batch: Write[]): never {
    for (const write of batch) write.reject(error);
    if (!fatal) {
      fatal = error;
      for (const write of writes.takeQueued()) write.reject(error);
      reportFailure(error);
    }
    throw error;
  }

  /** Commits `batch` in one transaction at one time, syncs the log, then answers each write. */
  async function commit(batch: Write[]): Promise<void> {
    const now = Date.now();
    const exec = <R>(statement: Statement, params?: Params) => execute<R>(statement, params, now);
    const tx: SqliteTx = {
      exec,
      run: async (statement, params) => exec(statement, params),
      lock: async () => {},
    };
    const results: unknown[] = [];
    try {
      // IMMEDIATE: the write lock first (waiting busy_timeout for another process), never an upgrade.
      begin!.run();
      for (const write of batch) {
        const result = write.work(tx);
        // The plant writes run at once, with no turn of the microtask queue each.
        results.push(result instanceof Promise ? await result : result);
      }
      commitTransaction!.run();
    } catch (cause) {
      try {
        if (db.inTransaction) rollback!.run();
      } catch {
        // Nothing was committed either way; the error below says why.
      }
      const error = new StoreUnavailableError('the writes could not be committed', { cause });
      // Another process holding the write lock past busy_timeout: nothing was written, retry later.
      if (!isLockError(cause)) fail(error, batch);
      for (const write of batch) write.reject(error);
      throw error;
    }
    const cause = await new Promise<Error | null>((done) => fdatasync(wal, done));
    if (cause) fail(new StoreUnavailableError('the write-ahead log could not be synced', { cause }), batch);
    for (const [i, write] of batch.entries()) write.resolve(results[i]);
    if (batch.some((write) => write.appends)) for (const listener of watchers) listener();
  }

  /** Queues `work` for the next group commit; resolves with what it returned once durable. */
  function transaction<T>(work: (tx: SqliteTx) => T | Promise<T>, appends = false): Promise<T> {
    if (fatal) return Promise.reject(fatal);
    if (closing) return Promise.reject(new StoreUnavailableError('store is closed'));
    return new Promise<T>((resolve, reject) => {
      writes.push({ work, appends, resolve: resolve as (result: unknown) => void, reject });
    });
  }

  async function read<T>(query: () => T): Promise<T> {
    // Never show a write before it is durable: wait for the commit going out, if any.
    const committing = writes.running();
    if (committing) await committing;
    // What a failed sync left in the page cache may not be on disk: show nothing more.
    if (fatal) throw fatal;
    try {
      if (closing) throw new Error('store is closed');
      return query();
    } catch (cause) {
      throw new StoreUnavailableError('the store could not be read', { cause });
    }
  }

  const shared: Db = {
    all: <R>(statement: Statement, params: Params = {}) => read(() => execute<R>(statement, params).rows),
    run: (statement, params) => transaction((tx) => tx.run(statement, params)),
    transaction: (work) => transaction(work),
  };

  return {
    db: shared,
    read,
    transaction,
    failed,
    watch(listener: () => void) {
      watchers.add(listener);
      return () => watchers.delete(listener);
    },
    close() {
      closing ??= (async () => {
        // Writes already accepted are committed and synced (and answered) before closing.
        await writes.drained();
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

/** SQLITE_BUSY or SQLITE_LOCKED (and their extended codes): another connection held the lock. */
function isLockError(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && /^SQLITE_(BUSY|LOCKED)/.test(code);
}
