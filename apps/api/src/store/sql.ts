export type Dialect = 'sqlite' | 'postgres';

/** A statement in one dialect: its text, and the names of the parameters it binds, in order. */
export type Compiled = { text: string; names: string[] };

/** A statement written once for both stores (see `statements`), compiled for each. */
export type Statement = { name: string } & Record<Dialect, Compiled>;

/** Parameters by name; a missing one is bound as NULL. */
export type Params = Record<string, unknown>;

/** What a statement did: the rows it answered (a query, or RETURNING) and how many rows it changed. */
export type Result<R> = { rows: R[]; changes: number };

/** How the parts both stores share run their statements: each engine (sqlite/, postgres/) provides one. */
export interface Db {
  /** The rows a read-only statement answers (SQLite: once the commit in flight is durable). */
  all<R>(statement: Statement, params?: Params): Promise<R[]>;
  /** A write, in a transaction of its own: resolves once committed and durable. */
  run<R = unknown>(statement: Statement, params?: Params): Promise<Result<R>>;
  /** Runs `work`'s statements in one transaction: all committed, durably, or none. */
  transaction<T>(work: (tx: Tx) => Promise<T>): Promise<T>;
}

export interface Tx {
  run<R = unknown>(statement: Statement, params?: Params): Promise<Result<R>>;
  /**
   * Holds, until the transaction ends, the lock `key` (any fixed int4 no other application takes)
   * and `name` stand for, so that the statements after this one see all its last holder committed.
   * PostgreSQL: an advisory lock on (key, hash of name), taken in a statement of its own, so that
   * the next statement's snapshot is taken after it. SQLite: nothing, its transaction holds the
   * database's only write lock.
   */
  lock(key: number, name: string): Promise<void>;
}

/**
 * Statements both stores run, named `prefix.key` (PostgreSQL prepares each under its name), in the
 * SQL they share: parameters are `@name`, and these words stand where the dialects differ:
 * - `{now}`: the statement's time. PostgreSQL: now(), the server's clock, which every instance
 *   shares; SQLite: milliseconds since the epoch, set by the store (one time per transaction).
 * - `{now + @ms}`, `{now - @ms}`: that many milliseconds later or earlier.
 * - `{skip locked}`: PostgreSQL: `FOR UPDATE SKIP LOCKED`, passing over rows another instance is
 *   taking right now; SQLite: nothing, one writer at a time.
 * - `{seq}`: the order rows were inserted in, which breaks ties between equal times: SQLite's rowid
 *   (times in milliseconds); PostgreSQL's times have microseconds, and ties there go by `id`.
 * - `{json @rows}`: the elements of the JSON array `@rows`, each as `value`.
 * - `{delivery id}`: a new random `webhook-id`, drawn by the database.
 */
export function statements<K extends string>(prefix: string, texts: Record<K, string>): Record<K, Statement> {
  const entries = Object.entries<string>(texts).map(([key, text]) => [key, sql(`${prefix}.${key}`, text)]);
  return Object.fromEntries(entries) as Record<K, Statement>;
}

/** One statement, as for `statements`. */
export function sql(name: string, text: string): Statement {
  if (registered.has(name)) throw new Error(`Two statements are named ${name}`);
  const statement = { name, sqlite: compile(text, 'sqlite'), postgres: compile(text, 'postgres') };
  registered.set(name, statement);
  return statement;
}

export const registered = new Map<string, Statement>();
const WORDS = /\{now(?: ([+-]) @(\w+))?\}|\{skip locked\}|\{seq\}|\{delivery id\}|\{json @(\w+)\}|@(\w+)/g;

function compile(text: string, dialect: Dialect): Compiled {
  const names: string[] = [];
  const sqlite = dialect === 'sqlite';
  // SQLite binds `?` by position (a name used twice binds twice); PostgreSQL `$n`, the nth name.
  const param = (name: string) => {
    if (sqlite || !names.includes(name)) names.push(name);
    return sqlite ? '?' : `$${names.indexOf(name) + 1}`;
  };
  const compiled = text.replace(WORDS, (word, sign?: string, ms?: string, json?: string, name?: string) => {
    if (name) return param(name);
    if (json)
      return sqlite ? `json_each(${param(json)})` : `json_array_elements(CAST(${param(json)} AS json))`;
    if (word === '{skip locked}') return sqlite ? '' : 'FOR UPDATE SKIP LOCKED';
    if (word === '{seq}') return sqlite ? 'rowid' : 'id';
    if (word === '{delivery id}')
      return `'msg_' || ${sqlite ? 'lower(hex(randomblob(16)))' : "replace(gen_random_uuid()::text, '-', '')"}`;
    const now = sqlite ? param('now') : 'now()';
    if (!sign || !ms) return now;
    return `(${now} ${sign} ${sqlite ? param(ms) : `CAST(${param(ms)} AS bigint) * interval '1 millisecond'`})`;
  });
  return { text: compiled, names };
}

/** The values `compiled` binds, in order, from `params` (a missing one is NULL; SQLite's `{now}` is `now`). */
export const bind = ({ names }: Compiled, params: Params, now?: number) =>
  names.map((name) => (name === 'now' && now !== undefined ? now : (params[name] ?? null)));

/** A point in time as the stores read it: SQLite keeps milliseconds since the epoch, PostgreSQL a Date. */
export type Time = Date | bigint;

export const toDate = (time: Time): Date => (time instanceof Date ? time : new Date(Number(time)));
export const toDateOrNull = (time: Time | null): Date | null => (time === null ? null : toDate(time));
