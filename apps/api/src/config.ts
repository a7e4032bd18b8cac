import { z } from 'zod';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

const EnvSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().min(1).default('127.0.0.1'),
  DATABASE_URL: z
    .string()
    .default('file:./data/plants.db')
    .refine((url) => url.startsWith('file:') && url.length > 'file:'.length, {
      message: 'must be file:<path> (SQLite)',
    }),
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

export type Config = {
  port: number;
  host: string;
  /** Path of the SQLite database file. */
  sqlitePath: string;
  /** Accepted bearer tokens; `undefined` means "generate one on first start". */
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
  return {
    port: e.PORT,
    host: e.HOST,
    sqlitePath: e.DATABASE_URL.slice('file:'.length),
    apiTokens: e.API_TOKENS,
    logLevel: e.LOG_LEVEL,
    production: e.NODE_ENV === 'production',
  };
}
