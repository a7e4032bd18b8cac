export type Dialect = 'sqlite' | 'postgres';
/** A statement in one dialect, with the names of the parameters it binds, in order. */
export type Compiled = { text: string; names: string[] };
export type Statement = { name: string } & Record<Dialect, Compiled>;
export type Params = Record<string, unknown>;
export type Result<R> = { rows: R[]; changes: number };

/** How the shared parts run statements; each engine provides one. */
export interface Db {
  /** The rows a read-only statement answers (SQLite: once the commit in flight is durable). */
  all<R>(statement: Statement, params?: Params): Promise<R[]>;
  /** A write in a transaction of its own, resolved once durable. */
  run<R = unknown>(statement: Statement, params?: Params): Promise<Result<R>>;
  transaction<T>(work: (tx: Tx) => Promise<T>): Promise<T>;
  /** Which engine runs the statements, where a store's part does more than pick its text. */
  readonly dialect: Dialect;
}

export interface Tx extends Pick<Db, 'run'> {
  /**
   * Holds lock (`key`, `name`), so later statements see all its last holder committed: PostgreSQL's
   * advisory lock, alone (the next snapshot follows it); SQLite's transaction holds the only write lock.
   */
  lock(key: number, name: string): Promise<void>;
}

/**
 * Statements both stores run, named `prefix.key`; parameters are `@name`, and words stand for what differs:
 * - `{now}`: PostgreSQL's now() (one clock for every instance); SQLite: epoch ms, one per transaction.
 * - `{now + @ms}`, `{now - @ms}`: that many milliseconds later or earlier; `{now + table.column}`: as
 *   many as that (integer) column holds.
 * - `{for update}`: PostgreSQL's `FOR UPDATE`, the rows read locked until commit; `{skip locked}`:
 *   `FOR UPDATE SKIP LOCKED`, passing over rows another instance is taking. Nothing on SQLite, whose
 *   one writer at a time holds them all.
 * - `{seq}`: insertion order, breaking ties of equal times (SQLite's rowid; PostgreSQL's `id`).
 * - `{json @rows}`: the elements of the JSON array `@rows`, each as `value`.
 * - `{code points}`: text compared by code point (UTF-8 bytes): SQLite's default; PostgreSQL's `COLLATE "C"`.
 * - `{delivery id}`: a new `webhook-id`, time-ordered as `newWebhookId` makes them (webhooks/event.ts).
 */
export function statements<K extends string>(prefix: string, texts: Record<K, string>): Record<K, Statement> {
  const entries = Object.entries<string>(texts).map(([key, text]) => {
    const name = `${prefix}.${key}`;
    if (registered.has(name)) throw new Error(`Two statements are named ${name}`);
    const statement = { name, sqlite: compile(text, 'sqlite'), postgres: compile(text, 'postgres') };
    registered.set(name, statement);
    return [key, statement];
  });
  return Object.fromEntries(entries) as Record<K, Statement>;
}

export const registered = new Map<string, Statement>();
const WORDS =
  /\{now(?: ([+-]) (@\w+|\w+\.\w+))?\}|\{for update\}|\{skip locked\}|\{seq\}|\{delivery id\}|\{code points\}|\{json @(\w+)\}|@(\w+)/g;

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
    if (word === '{for update}') return sqlite ? '' : 'FOR UPDATE';
    if (word === '{skip locked}') return sqlite ? '' : 'FOR UPDATE SKIP LOCKED';
    if (word === '{seq}') return sqlite ? 'rowid' : 'id';
    if (word === '{code points}') return sqlite ? '' : 'COLLATE "C"';
    if (word === '{delivery id}')
      return sqlite
        ? `'msg_' || printf('%012x', ${param('now')}) || lower(hex(randomblob(10)))`
        : "'msg_' || lpad(to_hex(CAST(extract(epoch FROM now()) * 1000 AS bigint)), 12, '0') || substr(replace(gen_random_uuid()::text, '-', ''), 13)";
    const now = sqlite ? param('now') : 'now()';
    if (!sign || !ms) return now;
    const amount = ms.startsWith('@') ? param(ms.slice(1)) : ms;
    return `(${now} ${sign} ${sqlite ? amount : `CAST(${amount} AS bigint) * interval '1 millisecond'`})`;
  });
  return { text: compiled, names };
}

/** Runs `work` between begin and commit; on failure rolls back (ignoring its failure) and rethrows. */
export async function atomically<T>(
  step: (sql: 'begin' | 'commit' | 'rollback') => unknown,
  work: () => Promise<T>,
): Promise<T> {
  await step('begin');
  try {
    const done = await work();
    await step('commit');
    return done;
  } catch (error) {
    await (async () => step('rollback'))().catch(() => {});
    throw error;
  }
}

/** The values `compiled` binds from `params` (a missing one is NULL; SQLite's `{now}` is `now`). */
export const bind = ({ names }: Compiled, params: Params, now?: number) =>
  names.map((name) => (name === 'now' && now !== undefined ? now : (params[name] ?? null)));

/** A time as read: SQLite keeps epoch milliseconds, PostgreSQL a Date. */
export type Time = Date | bigint;
export const toDate = (time: Time): Date => (time instanceof Date ? time : new Date(Number(time)));
export const toDateOrNull = (time: Time | null): Date | null => (time === null ? null : toDate(time));
