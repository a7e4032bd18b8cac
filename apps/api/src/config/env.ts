import { Resolver } from 'node:dns';
import { Webhook } from 'standardwebhooks';
import { z } from 'zod';
import { IssuersSchema } from './identity.ts';
import { isSecretsKey } from './secrets-key.ts';

// Every variable the api reads and what a valid value is; config.ts turns them into a `Config`.

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

const POSTGRES_URL = /^postgres(ql)?:\/\//;

/** Shortest `API_TOKENS` entry: 16 characters, so no configured token is a guessable word. */
export const MIN_API_TOKEN_LENGTH = 16;

/** What a bearer token may hold (RFC 6750 b64token): any other character could never match. */
const B64TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;

/** Standard Webhooks: secrets SHOULD be 24 to 64 random bytes. */
const WEBHOOK_SECRET_BYTES = { min: 24, max: 64 };

/** The non-empty, trimmed entries of a comma-separated variable; `undefined` when it is unset. */
function commaList(value: string | undefined): string[] | undefined {
  return value
    ?.split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry.length > 0);
}

/** OTEL_TRACES_SAMPLER's values that the SDK implements (the spec's, less the remote ones). */
export const TRACES_SAMPLERS = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
] as const;

/** OpenTelemetry's rule for its variables: an empty value is the same as none. */
function unsetIfEmpty<T extends z.ZodType>(schema: T) {
  return z.preprocess((value) => (value === '' ? undefined : value), schema);
}

/** OTLP over HTTP, in either encoding; gRPC is not bundled. */
function otlpProtocol() {
  return z.enum(['http/protobuf', 'http/json'], {
    error: 'must be http/protobuf or http/json (OTLP over gRPC is not supported)',
  });
}

/** Every variable the api reads, with its default: also what docs/configuration.md must list. */
export const EnvSchema = z.object({
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
    .transform(commaList)
    .refine((tokens) => tokens === undefined || tokens.length > 0, {
      message: 'must list at least one token (comma-separated)',
    })
    // Never echo a token in these messages: they are secrets.
    .refine(
      (tokens) => tokens === undefined || tokens.every((token) => token.length >= MIN_API_TOKEN_LENGTH),
      {
        message: `must hold tokens of at least ${MIN_API_TOKEN_LENGTH} characters (e.g. openssl rand -base64 32)`,
      },
    )
    .refine((tokens) => tokens === undefined || tokens.every((token) => B64TOKEN.test(token)), {
      message: 'must hold tokens of letters, digits and -._~+/ (optionally ending in =)',
    }),
  LOG_LEVEL: z.enum(LOG_LEVELS).default('info'),
  NODE_ENV: z.string().default('development'),
  WEBHOOK_URLS: z
    .string()
    .optional()
    .transform((value) => [...new Set(commaList(value))])
    .refine((urls) => urls.every(isHttpUrl), {
      message: 'must be comma-separated http:// or https:// URLs',
    })
    // fetch refuses them, and they would be written to the outbox: refuse them here, never echoed.
    .refine((urls) => !urls.some(hasCredentials), {
      message:
        'must not carry credentials (user:password@); subscribers authenticate deliveries by their signature',
    }),
  WEBHOOK_SECRET: z
    .string()
    .optional()
    .refine((secret) => secret === undefined || isWebhookSecret(secret), {
      // Never echo the value: it is a secret.
      message: `must be whsec_ followed by ${WEBHOOK_SECRET_BYTES.min} to ${WEBHOOK_SECRET_BYTES.max} bytes in base64`,
    }),
  WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(100).max(300_000).default(10_000),
  WEBHOOK_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(100).default(15),
  WEBHOOK_BACKOFF_BASE_MS: z.coerce.number().int().min(1).max(3_600_000).default(1_000),
  WEBHOOK_BACKOFF_MAX_MS: z.coerce.number().int().min(1).max(86_400_000).default(3_600_000),
  WEBHOOK_POLL_INTERVAL_MS: z.coerce.number().int().min(10).max(600_000).default(1_000),
  WEBHOOK_LEASE_MS: z.coerce.number().int().min(200).max(3_600_000).default(60_000),
  WEBHOOK_CONCURRENCY: z.coerce.number().int().min(1).max(100).default(32),
  WEBHOOK_BREAKER_FAILURES: z.coerce.number().int().min(1).max(1_000).default(5),
  WEBHOOK_BREAKER_COOLDOWN_MS: z.coerce.number().int().min(10).max(3_600_000).default(30_000),
  WEBHOOK_RETENTION_MS: z.coerce.number().int().min(0).max(31_536_000_000).default(86_400_000),
  WEBHOOK_SECRETS_KEY: z
    .string()
    .optional()
    // Never echo the value: it is a secret.
    .refine((key) => key === undefined || isSecretsKey(key), {
      message: 'must be base64 of 32 random bytes (e.g. openssl rand -base64 32)',
    }),
  WEBHOOK_SECRET_OVERLAP_MS: z.coerce.number().int().min(0).max(2_592_000_000).default(86_400_000),
  WEBHOOK_ALLOW_PRIVATE_URLS: z.enum(['0', '1'], { error: 'must be 1 or 0' }).default('0'),
  WEBHOOK_ENDPOINTS_PER_TOKEN: z.coerce.number().int().min(0).max(10_000).default(20),
  WEBHOOK_PENDING_PER_ENDPOINT: z.coerce.number().int().min(1).max(1_000_000).default(1_000),
  WEBHOOK_FAILED_RETENTION_MS: z.coerce.number().int().min(0).max(31_536_000_000).default(604_800_000),
  WEBHOOK_DNS_SERVERS: z
    .string()
    .optional()
    .transform(commaList)
    .refine((servers) => servers === undefined || (servers.length > 0 && areNameServers(servers)), {
      message:
        'must be comma-separated name server addresses: 192.0.2.53, 192.0.2.53:5353 or [2001:db8::53]:53',
    }),
  WEBHOOK_DNS_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(5_000),
  WEBHOOK_DNS_CONCURRENCY: z.coerce.number().int().min(1).max(10_000).default(64),
  WEBHOOK_DNS_CONCURRENCY_PER_TOKEN: z.coerce.number().int().min(1).max(10_000).default(4),
  RATE_LIMIT_MAX: z.coerce.number().int().min(0).default(6_000),
  RATE_LIMIT_WINDOW_SECONDS: z.coerce.number().int().min(1).max(86_400).default(60),
  REDIS_URL: z
    .string()
    .optional()
    .refine((url) => url === undefined || /^rediss?:\/\//.test(url), {
      message: 'must be redis://host:port or rediss://…',
    }),
  REDIS_TIMEOUT_MS: z.coerce.number().int().min(10).max(10_000).default(250),
  AUTH_FAILURE_MAX: z.coerce.number().int().min(0).default(30),
  CORS_ORIGINS: z
    .string()
    .optional()
    .transform((value) => commaList(value) ?? [])
    .refine((origins) => origins.every(isOrigin), {
      message:
        'must be comma-separated origins such as https://app.example.com (scheme, host, optional port; no path)',
    }),
  HTTP_HEADERS_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(10_000),
  HTTP_REQUEST_TIMEOUT_MS: z.coerce.number().int().min(100).max(3_600_000).default(30_000),
  HTTP_KEEP_ALIVE_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(5_000),
  SHUTDOWN_GRACE_MS: z.coerce.number().int().min(0).max(600_000).default(10_000),
  TOKEN_REFRESH_MS: z.coerce.number().int().min(100).max(3_600_000).default(5_000),
  // Identity providers (docs/identity.md).
  OIDC_ISSUERS: IssuersSchema,
  OIDC_ISSUER: unsetIfEmpty(z.string().optional()),
  OIDC_AUDIENCE: unsetIfEmpty(z.string().optional()),
  OIDC_CLIENT_ID: unsetIfEmpty(z.string().optional()),
  OIDC_JWKS_COOLDOWN_MS: z.coerce.number().int().min(1_000).max(3_600_000).default(30_000),
  EVENTS_RETENTION_MS: z.coerce.number().int().min(1_000).max(31_536_000_000).default(604_800_000),
  EVENT_STREAMS_MAX: z.coerce.number().int().min(1).max(100_000).default(2_000),
  EVENT_STREAMS_PER_TOKEN: z.coerce.number().int().min(1).max(100_000).default(100),
  EVENT_STREAM_BUFFER: z.coerce.number().int().min(1).max(1_000_000).default(1_000),
  EVENTS_HEARTBEAT_MS: z.coerce.number().int().min(100).max(600_000).default(15_000),
  EVENTS_POLL_MS: z.coerce.number().int().min(10).max(60_000).default(1_000),
  EVENTS_REPLAY_MAX: z.coerce.number().int().min(1).max(10_000_000).default(10_000),
  IDEMPOTENCY_TTL_MS: z.coerce.number().int().min(1_000).max(2_592_000_000).default(86_400_000),
  IDEMPOTENCY_IN_FLIGHT_MS: z.coerce.number().int().min(100).max(3_600_000).default(10_000),
  // OpenTelemetry's standard variables (docs/tracing.md): tracing is on only with an endpoint.
  OTEL_SDK_DISABLED: unsetIfEmpty(
    z
      .string()
      .optional()
      .refine((value) => value === undefined || /^(true|false)$/i.test(value.trim()), {
        message: 'must be true or false',
      })
      .transform((value) => value?.trim().toLowerCase() === 'true'),
  ),
  // Never echo these two: a collector's URL can carry credentials.
  OTEL_EXPORTER_OTLP_ENDPOINT: unsetIfEmpty(
    z
      .string()
      .optional()
      .refine((url) => url === undefined || isHttpUrl(url), {
        message: 'must be an http:// or https:// URL',
      }),
  ),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: unsetIfEmpty(
    z
      .string()
      .optional()
      .refine((url) => url === undefined || isHttpUrl(url), {
        message: 'must be an http:// or https:// URL',
      }),
  ),
  OTEL_EXPORTER_OTLP_PROTOCOL: unsetIfEmpty(otlpProtocol().default('http/protobuf')),
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: unsetIfEmpty(otlpProtocol().optional()),
  OTEL_SERVICE_NAME: unsetIfEmpty(z.string().min(1).optional()),
  OTEL_TRACES_SAMPLER: unsetIfEmpty(
    z
      .enum(TRACES_SAMPLERS, { error: `must be one of ${TRACES_SAMPLERS.join(', ')}` })
      .default('parentbased_always_on'),
  ),
  OTEL_TRACES_SAMPLER_ARG: unsetIfEmpty(
    z.coerce
      .number({ error: 'must be a number from 0 to 1' })
      .min(0, { error: 'must be a number from 0 to 1' })
      .max(1, { error: 'must be a number from 0 to 1' })
      .optional(),
  ),
  OTEL_BSP_SCHEDULE_DELAY: unsetIfEmpty(z.coerce.number().int().min(1).max(600_000).default(5_000)),
  OTEL_BSP_MAX_QUEUE_SIZE: unsetIfEmpty(z.coerce.number().int().min(1).max(1_000_000).default(2_048)),
  OTEL_BSP_MAX_EXPORT_BATCH_SIZE: unsetIfEmpty(z.coerce.number().int().min(1).max(1_000_000).default(512)),
});

function isOrigin(text: string): boolean {
  if (!URL.canParse(text)) return false;
  const url = new URL(text);
  return (url.protocol === 'http:' || url.protocol === 'https:') && url.origin === text;
}

function isHttpUrl(text: string): boolean {
  if (!URL.canParse(text)) return false;
  const { protocol, hostname } = new URL(text);
  return (protocol === 'http:' || protocol === 'https:') && hostname.length > 0;
}

function hasCredentials(text: string): boolean {
  if (!URL.canParse(text)) return false;
  const { username, password } = new URL(text);
  return username.length > 0 || password.length > 0;
}

/** Accepted by the library that signs (so start-up, not the first delivery, finds a bad secret). */
function isWebhookSecret(secret: string): boolean {
  const base64 = secret.slice('whsec_'.length);
  if (!secret.startsWith('whsec_') || !/^[A-Za-z0-9+/]+={0,2}$/.test(base64)) return false;
  const bytes = Buffer.from(base64, 'base64').length;
  if (bytes < WEBHOOK_SECRET_BYTES.min || bytes > WEBHOOK_SECRET_BYTES.max) return false;
  try {
    new Webhook(secret);
    return true;
  } catch {
    return false;
  }
}

/** Whether c-ares takes these as name servers (its own parser: addresses, optional ports). */
function areNameServers(servers: string[]): boolean {
  try {
    new Resolver().setServers(servers);
    return true;
  } catch {
    return false;
  }
}

/** The driver parses the rest (its forms include `postgres://user@/db?host=/run/postgresql`). */
function isPostgresUrl(url: string): boolean {
  return POSTGRES_URL.test(url) && url.replace(POSTGRES_URL, '').length > 0;
}
