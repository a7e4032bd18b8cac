import pg from 'pg';
import type { StoreConfig } from '../../config.ts';
import { bind, type Db, type Params, type Result, type Statement, statements, type Tx } from '../sql.ts';
import { StoreUnavailableError } from '../store.ts';

/** `DATABASE_URL`, `DATABASE_POOL_SIZE` and `DATABASE_TIMEOUT_MS` (see `StoreConfig`). */
export type PostgresStoreOptions = Omit<Extract<StoreConfig, { kind: 'postgres' }>, 'kind'>;

export const APPLICATION_NAME = 'plant-store-api';
/** Session settings of every pooled connection (sent at connect). */
export const DURABLE_SESSION = '-c synchronous_commit=on';

const INT8_OID = 20;
/** int8 as an exact bigint, for this store's connections only (pg's global parsers stay untouched). */
const types: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8_OID && format !== 'binary'
      ? (text: string) => BigInt(text)
      : pg.types.getTypeParser(oid, format)) as pg.CustomTypesConfig['getTypeParser'],
};

const TX = statements('postgres.transaction', {
  begin: 'BEGIN',
  commit: 'COMMIT',
  rollback: 'ROLLBACK',
  lock: 'SELECT pg_advisory_xact_lock(@key, hashtext(@name))',
});

/**
 * The pool every call of the PostgreSQL store runs on, each call bounded by `timeoutMs`, and the
 * statements both stores share (`db`) run on it.
 */
export function connect({ url, poolSize, timeoutMs }: PostgresStoreOptions) {
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

  /**
   * Runs `work` on one pooled connection within one call's time bound; `run` gives each statement
   * what is left of it (pg destroys the connection when it runs out). A connection that failed for
   * a reason other than its statement is closed, not reused; none to be had is the store unavailable.
   */
  async function withClient<T>(work: (run: Tx['run']) => Promise<T>): Promise<T> {
    const deadline = performance.now() + timeoutMs;
    let client: pg.PoolClient;
    try {
      client = await pool.connect();
    } catch (cause) {
      throw new StoreUnavailableError('no PostgreSQL connection could be had', { cause });
    }
    const run = async <R>({ name, postgres }: Statement, params: Params = {}): Promise<Result<R>> => {
      const timeout = Math.max(1, Math.ceil(deadline - performance.now()));
      const { rows, rowCount } = await client.query({
        name,
        text: postgres.text,
        values: bind(postgres, params),
        query_timeout: timeout,
      } as pg.QueryConfig);
      return { rows, changes: rowCount ?? 0 };
    };
    try {
      const result = await work(run);
      client.release();
      return result;
    } catch (cause) {
      const error = toStoreError(cause);
      client.release(error instanceof StoreUnavailableError ? error : undefined);
      throw error;
    }
  }

  /** Counts the call while it runs, so that `close` lets it finish; none starts once closing. */
  function call<T>(operation: () => Promise<T>): Promise<T> {
    if (closing) return Promise.reject(new StoreUnavailableError('store is closed'));
    const running = operation();
    inFlight.add(running);
    const forget = () => inFlight.delete(running);
    running.then(forget, forget);
    return running;
  }

  /** A statement on a pooled connection of its own (autocommit). */
  const exec = <R>(statement: Statement, params?: Params) => withClient((run) => run<R>(statement, params));

  const db: Db = {
    all: async <R>(statement: Statement, params?: Params) => (await db.run<R>(statement, params)).rows,
    run: (statement, params) => call(() => exec(statement, params)),
    transaction: (work) =>
      call(() =>
        withClient(async (run) => {
          await run(TX.begin);
          try {
            const done = await work({
              run,
              lock: async (key, name) => void (await run(TX.lock, { key, name })),
            });
            await run(TX.commit);
            return done;
          } catch (error) {
            await run(TX.rollback).catch(() => {});
            throw error;
          }
        }),
      ),
  };

  return {
    db,
    exec,
    call,
    /** Waits for the calls already running (their answers are delivered), then ends the pool. */
    async close(before: () => Promise<void>) {
      closing ??= (async () => {
        while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
        await before();
        await pool.end();
      })();
      return closing;
    },
  };
}

/**
 * SQLSTATE classes meaning "the database cannot serve this now" rather than "this statement is
 * wrong": 08 connection exception, 40 transaction rollback (serialization failure, deadlock; routine
 * on distributed engines), 53 insufficient resources (too many connections), 57 operator
 * intervention (shutdown, statement timeout), 58 system error. Also 25006 (see `toStoreError`).
 */
const UNAVAILABLE_CLASSES = new Set(['08', '40', '53', '57', '58']);

/** A failure to reach or use the server becomes `StoreUnavailableError` (503); anything else is a bug (500). */
export function toStoreError(cause: unknown): Error {
  if (cause instanceof StoreUnavailableError) return cause;
  if (cause instanceof pg.DatabaseError) {
    const code = cause.code ?? '';
    // 25006: the server is read-only, e.g. a standby after a failover.
    if (!UNAVAILABLE_CLASSES.has(code.slice(0, 2)) && code !== '25006') return cause;
  }
  // Not a server answer: a refused or reset socket, a timeout, a pool that was ended.
  return new StoreUnavailableError('PostgreSQL is unavailable', { cause });
}
