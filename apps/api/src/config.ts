import { z } from 'zod';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

const POSTGRES_URL = /^postgres(ql)?:\/\//;

const EnvSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().min(1).default('127.0.0.1'),
  DATABASE_URL: z
    .string()
    .default('file:./data/plants.db')
    .refine((url) => (url.startsWith('file:') && url.length > 'file:'.length) || isPostgresUrl(url), {
      message: 'must be file:<path> (SQLite) or postgres://user@host:port/database (PostgreSQL)',
    }),
  DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(1000).default(10),
  DATABASE_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(5_000),
  API_TOKENS: z
    .string()
    .optional()
    .transform((value) =>
      value
        ?.split(',')
        .map((token) => token.trim())
        .filter((token) => token.length > 0),
    )
    .refine((tokens) => tokens === undefined || tokens.length > 0, {
      message: 'must list at least one token (comma-separated)',
    }),
  LOG_LEVEL: z.enum(LOG_LEVELS).default('info'),
  NODE_ENV: z.string().default('development'),
});

/** Which store the api runs on, from `DATABASE_URL`. */
export type StoreConfig =
  | { kind: 'sqlite' /** Path of the SQLite database file. */; path: string }
  | {
      kind: 'postgres';
      /** The connection URL, credentials included: never log it (see `describeStore`). */
      url: string;
      /** Most connections this process opens (`DATABASE_POOL_SIZE`). */
      poolSize: number;
      /** Bound on each store call: waiting for a connection, connecting and the statement (`DATABASE_TIMEOUT_MS`). */
      timeoutMs: number;
    };

export type Config = {
  port: number;
  host: string;
  store: StoreConfig;
  /** Accepted bearer tokens; `undefined` means "generate one on first start" (SQLite only). */
  apiTokens: string[] | undefined;
  logLevel: (typeof LOG_LEVELS)[number];
  production: boolean;
};

/** Thrown when the environment does not describe a runnable configuration. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Reads and validates the environment: the only place that reads `process.env`. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new ConfigError(`Invalid configuration: ${issue.path.join('.')} ${issue.message}`);
  }
  const e = parsed.data;
  const store: StoreConfig = e.DATABASE_URL.startsWith('file:')
    ? { kind: 'sqlite', path: e.DATABASE_URL.slice('file:'.length) }
    : {
        kind: 'postgres',
        url: e.DATABASE_URL,
        poolSize: e.DATABASE_POOL_SIZE,
        timeoutMs: e.DATABASE_TIMEOUT_MS,
      };
  // A generated token lives in a file beside the SQLite database; instances sharing PostgreSQL
  // share no files, so each would generate its own and reject the others' clients.
  if (store.kind === 'postgres' && e.API_TOKENS === undefined) {
    throw new ConfigError(
      'Invalid configuration: API_TOKENS is required when DATABASE_URL is a PostgreSQL URL (instances share no files to keep a generated token in)',
    );
  }
  return {
    port: e.PORT,
    host: e.HOST,
    store,
    apiTokens: e.API_TOKENS,
    logLevel: e.LOG_LEVEL,
    production: e.NODE_ENV === 'production',
  };
}

/** The driver parses the rest (its forms include `postgres://user@/db?host=/run/postgresql`). */
function isPostgresUrl(url: string): boolean {
  return POSTGRES_URL.test(url) && url.replace(POSTGRES_URL, '').length > 0;
}
