import { closeSync, fdatasync, fsyncSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import { groupCommit } from '../group-commit.ts';
import type { Db, Params, Result, Statement, Tx } from '../sql.ts';
import { type CommitObserver, StoreUnavailableError } from '../contract.ts';
import { type Connection, executor } from './connection.ts';

/**
 * A group commit's transaction; `exec` runs a statement at once, for writes that need no await.
 * `kept(key, read)`: `read()`'s answer, kept for the rest of the commit until a write that appends no
 * events runs (only such writes change what it is for: the webhook endpoints).
 */
export type SqliteTx = Tx & {
  exec<R = unknown>(statement: Statement, params?: Params): Result<R>;
  kept<T>(key: string, read: () => T): T;
};

/** A queued write; `appends`: it may append events (`watch` hears of its commit). */
type Write = {
  work: (tx: SqliteTx) => unknown;
  appends: boolean;
  resolve: (result: unknown) => void;
  reject: (error: Error) => void;
};

/**
 * SQLite's commit path (WAL, synchronous=NORMAL): a group commit is one transaction, whose writes are
 * answered once the log is fdatasync'd off the event loop; reads wait, so nobody sees what is not durable.
 * A failed COMMIT or sync is fatal: the kernel may drop the pages while a later sync succeeds.
 */
export function sqliteCommit(db: Connection, path: string, observer?: CommitObserver) {
  // SQLite keeps this inode as its log while the connection is open.
  const wal = openSync(`${path}-wal`, 'a', 0o600);
  // Make the migrations and the log's directory entry durable once (a fresh file may not be).
  fsyncSync(wal);
  const dir = openSync(dirname(path), 'r');
  fsyncSync(dir);
  closeSync(dir);

  const execute = executor(db);
  const [begin, commitTx, rollback] = ['BEGIN IMMEDIATE', 'COMMIT', 'ROLLBACK'].map((sql) => db.prepare(sql));
  const writes = groupCommit(commit, { system: 'sqlite', observer });
  let closing: Promise<void> | undefined;
  let fatal: StoreUnavailableError | undefined;
  let reportFailure: (error: Error) => void = () => {};
  const failed = new Promise<Error>((resolve) => {
    reportFailure = resolve;
  });
  const watchers = new Set<() => void>();

  /** Rejects `batch` and, from the first failure on, every call. */
  function fail(error: StoreUnavailableError, batch: Write[]): never {
    for (const write of batch) write.reject(error);
    if (!fatal) {
      fatal = error;
      for (const write of writes.takeQueued()) write.reject(error);
      reportFailure(error);
    }
    throw error;
  }

  async function commit(batch: Write[]): Promise<void> {
    const now = Date.now();
    const exec = <R>(statement: Statement, params?: Params): Result<R> => execute<R>(statement, params, now);
    const kept = new Map<string, unknown>();
    const tx: SqliteTx = {
      exec,
      run: async (statement, params) => exec(statement, params),
      lock: async () => {},
      kept: <T>(key: string, read: () => T) =>
        (kept.has(key) ? kept.get(key) : kept.set(key, read()).get(key)) as T,
    };
    const results: unknown[] = [];
    try {
      // IMMEDIATE: the write lock first (waiting busy_timeout for another process), never an upgrade.
      begin!.run();
      for (const write of batch) {
        const result = write.work(tx);
        // The plant writes run at once, with no turn of the microtask queue each.
        results.push(result instanceof Promise ? await result : result);
        if (!write.appends) kept.clear();
      }
      commitTx!.run();
    } catch (cause) {
      try {
        if (db.inTransaction) rollback!.run();
      } catch {
        // Nothing was committed either way.
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

  return {
    db: {
      all: <R>(statement: Statement, params: Params = {}) => read(() => execute<R>(statement, params).rows),
      run: (statement, params) => transaction((tx) => tx.run(statement, params)),
      transaction: (work) => transaction(work),
      dialect: 'sqlite',
    } satisfies Db,
    read,
    transaction,
    failed,
    watch(listener: () => void) {
      watchers.add(listener);
      return () => watchers.delete(listener);
    },
    close() {
      closing ??= (async () => {
        await writes.drained();
        // No checkpoint after a failed sync (the log in memory may not be on disk): SQLite recovers.
        if (fatal) return;
        db.close();
        closeSync(wal);
      })();
      return closing;
    },
  };
}

const isLockError = (error: unknown) =>
  /^SQLITE_(BUSY|LOCKED)/.test(String((error as { code?: unknown })?.code));
