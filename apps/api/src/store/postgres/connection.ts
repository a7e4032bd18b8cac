import pg from 'pg';
import type { StoreConfig } from '../../config/config.ts';
import { atomically, bind, type Db, type Params, type Statement, statements, type Tx } from '../sql.ts';
import { StoreUnavailableError } from '../contract.ts';

/** `DATABASE_URL`, `DATABASE_POOL_SIZE` and `DATABASE_TIMEOUT_MS` (see `StoreConfig`). */
export type PostgresStoreOptions = Omit<Extract<StoreConfig, { kind: 'postgres' }>, 'kind'>;
export const APPLICATION_NAME = 'plant-store-api';
export const DURABLE_SESSION = '-c synchronous_commit=on';

/** int8 as an exact bigint, on this store's connections only (pg's global parsers stay untouched). */
const types = new pg.TypeOverrides();
types.setTypeParser(pg.types.builtins.INT8, 'text', BigInt);

const TX = statements('postgres.transaction', {
  begin: 'BEGIN',
  commit: 'COMMIT',
  rollback: 'ROLLBACK',
  lock: 'SELECT pg_advisory_xact_lock(@key, hashtext(@name))',
});

/** The pool every PostgreSQL store call runs on, each bounded by `timeoutMs`. */
export function connect({ url, poolSize, timeoutMs }: PostgresStoreOptions) {
  const pool = new pg.Pool({
    connectionString: url,
    max: poolSize,
    idleTimeoutMillis: 10_000,
    connectionTimeoutMillis: timeoutMs,
    // The server gives up too (a statement may commit meanwhile: a 503 create's outcome is unknown).
    statement_timeout: timeoutMs,
    // Through NATs; dead connections are found by the per-call bound, not by keepalive (minutes).
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
    application_name: APPLICATION_NAME,
    // A COMMIT returns only once flushed to disk, whatever the server's default.
    options: DURABLE_SESSION,
    types,
  });
  // An idle connection the server closed is dropped by the pool; its error must not crash the process.
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));

  const inFlight = new Set<Promise<unknown>>();
  let closing: Promise<void> | undefined;

  /** Runs `work` on one connection within one call's time bound; a broken connection is not reused. */
  async function withClient<T>(work: (run: Tx['run']) => Promise<T>): Promise<T> {
    const deadline = performance.now() + timeoutMs;
    let client: pg.PoolClient;
    try {
      client = await pool.connect();
    } catch (cause) {
      throw new StoreUnavailableError('no PostgreSQL connection could be had', { cause });
    }
    const run = async ({ name, postgres }: Statement, params: Params = {}) => {
      const { rows, rowCount } = await client.query({
        name,
        text: postgres.text,
        values: bind(postgres, params),
        query_timeout: Math.max(1, Math.ceil(deadline - performance.now())),
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

  /** Counts the call while it runs, so that `close` lets it finish. */
  function call<T>(operation: () => Promise<T>): Promise<T> {
    if (closing) return Promise.reject(new StoreUnavailableError('store is closed'));
    const running = operation();
    inFlight.add(running);
    const forget = () => inFlight.delete(running);
    running.then(forget, forget);
    return running;
  }

  const exec = <R>(statement: Statement, params?: Params) => withClient((run) => run<R>(statement, params));

  const db: Db = {
    all: async <R>(statement: Statement, params?: Params) => (await db.run<R>(statement, params)).rows,
    run: (statement, params) => call(() => exec(statement, params)),
    transaction: (work) =>
      call(() =>
        withClient((run) =>
          atomically(
            (step) => run(TX[step]),
            () => work({ run, lock: async (key, name) => void (await run(TX.lock, { key, name })) }),
          ),
        ),
      ),
    dialect: 'postgres',
  };

  return {
    db,
    exec,
    call,
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
 * SQLSTATE classes for "cannot serve this now", not "this statement is wrong": 08 connection, 40 rollback
 * (serialization, deadlock: routine on distributed engines), 53 resources, 57 shutdown or timeout, 58 system.
 */
const UNAVAILABLE_CLASSES = new Set(['08', '40', '53', '57', '58']);

/** Failing to reach or use the server is `StoreUnavailableError` (503); anything else is a bug (500). */
export function toStoreError(cause: unknown): Error {
  if (cause instanceof StoreUnavailableError) return cause;
  if (cause instanceof pg.DatabaseError) {
    const code = cause.code ?? '';
    // 25006: the server is read-only, e.g. a standby after a failover.
    if (!UNAVAILABLE_CLASSES.has(code.slice(0, 2)) && code !== '25006') return cause;
  }
  return new StoreUnavailableError('PostgreSQL is unavailable', { cause });
}
