import { Resolver } from 'node:dns';
import { resolve } from 'node:path';
import type { EventHubLimits } from '../events/hub.ts';
import { Webhook } from 'standardwebhooks';
import { z } from 'zod';
import type { IdempotencyPolicy } from '../operations/idempotency.ts';
import { type IdentityConfig, identityConfig, IssuersSchema } from './identity.ts';
import { isSecretsKey } from './secrets-key.ts';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

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

/** Where the store is, for logs, without credentials. */
export function describeStore(config: StoreConfig): string {
  if (config.kind === 'sqlite') return resolve(config.path);
  // Credentials can sit in the user part and in the query (`?password=`): keep neither.
  return config.url.replace(/^(postgres(?:ql)?:\/\/)[^@/?#]*@/, '$1').replace(/[?#].*$/, '');
}

/**
 * Delivery of webhooks (webhooks/worker.ts): to the operator's subscribers (`WEBHOOK_URLS`) and to
 * the endpoints tokens register. The delivery settings always apply; only the subscribers are optional.
 */
export type WebhookConfig = {
  /** Operator subscribers: each create enqueues one delivery per URL; none when WEBHOOK_URLS is unset. */
  urls: string[];
  /** The `whsec_…` signing secret of the operator subscribers (set whenever `urls` is not empty): never log it. */
  secret?: string;
  /** Bound on one attempt: connecting, sending and the answer's status line. */
  timeoutMs: number;
  /** Attempts before a delivery is kept as failed. */
  maxAttempts: number;
  /** The wait after attempt n is random in [0, min(backoffMaxMs, backoffBaseMs · 2^(n−1))] (full jitter). */
  backoffBaseMs: number;
  backoffMaxMs: number;
  /** How often an idle worker looks for due deliveries. */
  pollIntervalMs: number;
  /** How long a claimed delivery stays invisible to other workers; longer than `timeoutMs`. */
  leaseMs: number;
  /** Most attempts one process runs at once to one subscriber URL: each URL has its own slots. */
  concurrency: number;
  /** A subscriber's circuit breaker: open after `failures` failed attempts in a row, for `cooldownMs`. */
  breaker: { failures: number; cooldownMs: number };
  /** Delivered deliveries are deleted this long after delivery. */
  retentionMs: number;
  /** Failed deliveries (attempts used up) are deleted this long after they failed. */
  failedRetentionMs: number;
};

/** Server-side bounds on slow and idle clients (node:http), and on draining at shutdown. */
export type HttpConfig = {
  /** A client must send all request headers within this. */
  headersTimeoutMs: number;
  /** A client must send the whole request (headers and body) within this. */
  requestTimeoutMs: number;
  /** An idle keep-alive connection is closed after this. */
  keepAliveTimeoutMs: number;
  /** On SIGTERM/SIGINT, in-flight requests and webhook attempts get this long before connections are cut. */
  shutdownGraceMs: number;
};

export type Config = {
  port: number;
  host: string;
  http: HttpConfig;
  /** Requests per token per window; `undefined` when RATE_LIMIT_MAX is 0 (no limit). */
  rateLimit: { points: number; windowSeconds: number } | undefined;
  /**
   * Failed authentications (a bearer token that is not valid) per client address per rate-limit
   * window; past it such requests are answered 429. `undefined` when AUTH_FAILURE_MAX is 0.
   */
  authFailureLimit: { points: number; windowSeconds: number } | undefined;
  /** Redis for counters shared by every instance (rate limits); in memory when unset. */
  redisUrl: string | undefined;
  /** Bound on connecting to Redis and on each command; past it the in-memory limiter answers. */
  redisTimeoutMs: number;
  /** Browser origins allowed by CORS; none (CORS off) by default. */
  corsOrigins: string[];
  /** How often each instance reloads tokens from the store: the bound on a revocation taking effect. */
  tokenRefreshMs: number;
  /** Identity providers whose JWT access tokens are accepted (none: opaque tokens only). */
  identity: IdentityConfig;
  store: StoreConfig;
  /** How long Idempotency-Keys are kept, and how long a claim may stay in flight (idempotency.ts). */
  idempotency: IdempotencyPolicy;
  /** Webhook delivery; `urls` is empty when `WEBHOOK_URLS` is unset. */
  webhooks: WebhookConfig;
  /** Endpoints registered by tokens (`/webhook-endpoints`). */
  webhookEndpoints: WebhookEndpointsConfig;
  events: EventsConfig;
  /**
   * Bearer tokens with every scope, besides those issued with `token create`; `undefined` means
   * "generate one on first start" on SQLite, and issued tokens only on PostgreSQL.
   */
  apiTokens: string[] | undefined;
  logLevel: (typeof LOG_LEVELS)[number];
  production: boolean;
  /** Traces to an OTLP collector; `undefined` (off) without an endpoint or with `OTEL_SDK_DISABLED=true`. */
  tracing: TracingConfig | undefined;
};

/**
 * Where spans go, which are kept and how they are batched (docs/tracing.md). The SDK reads the
 * exporter's other standard variables itself (headers, timeout, compression) and the resource's.
 */
export type TracingConfig = {
  /**
   * Where spans are POSTed: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as given, else
   * `OTEL_EXPORTER_OTLP_ENDPOINT` + `/v1/traces`. It may carry credentials: log its origin only.
   */
  url: string;
  protocol: 'http/protobuf' | 'http/json';
  /** `OTEL_SERVICE_NAME`; when unset, `service.name` of `OTEL_RESOURCE_ATTRIBUTES`, else `plant-store-api`. */
  serviceName: string | undefined;
  sampler: { name: (typeof TRACES_SAMPLERS)[number]; ratio: number };
  /** How often batched spans are sent (`OTEL_BSP_SCHEDULE_DELAY`). */
  scheduleDelayMs: number;
  /** Spans waiting to be sent, at most (`OTEL_BSP_MAX_QUEUE_SIZE`): past it new ones are dropped, not kept. */
  maxQueueSize: number;
  /** Spans per export, at most (`OTEL_BSP_MAX_EXPORT_BATCH_SIZE`, no more than the queue). */
  maxExportBatchSize: number;
};

/** Webhook endpoints that tokens register (operations/webhook-endpoints.ts). */
export type WebhookEndpointsConfig = {
  /**
   * The key that seals endpoint secrets at rest (`WEBHOOK_SECRETS_KEY`, 32 bytes); `undefined`: on
   * SQLite one generated into `webhook-secrets.key` beside the database, on PostgreSQL none (the
   * endpoint operations answer 503). Never log it.
   */
  secretsKey: Buffer | undefined;
  /** How long the previous secret keeps signing after a rotation. */
  secretOverlapMs: number;
  /** `WEBHOOK_ALLOW_PRIVATE_URLS=1`: any address and plain http allowed (development, tests). */
  allowPrivateUrls: boolean;
  /** Most endpoints one token may register. */
  perToken: number;
  /** Most pending deliveries an endpoint may have for `ping` and `redeliver` to add one. */
  pendingPerEndpoint: number;
  /** How endpoints' host names are resolved (webhooks/dns.ts). */
  dns: EndpointDnsConfig;
};

/** Resolution of endpoints' host names, with c-ares: never on libuv's thread pool. */
export type EndpointDnsConfig = {
  /** Name servers asked (`WEBHOOK_DNS_SERVERS`); `undefined`: the system's (/etc/resolv.conf). */
  servers: string[] | undefined;
  /** Bound on one lookup (A and AAAA together); past it the lookup is cancelled. */
  timeoutMs: number;
  /** Most lookups in flight on this instance, and for one token's endpoints. */
  concurrency: number;
  perTokenConcurrency: number;
};

/** The event log and its streams (`GET /plants/events`, `plants.events`). */
export type EventsConfig = EventHubLimits & {
  /** How long events are kept; older ones are pruned, and resuming before them answers 410. */
  retentionMs: number;
  /** A `: heartbeat` comment after this long without an event, so proxies keep idle streams open. */
  heartbeatMs: number;
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
  // A key pruned while its request is in flight would make that request's change fail (409).
  if (e.IDEMPOTENCY_TTL_MS <= e.IDEMPOTENCY_IN_FLIGHT_MS) {
    throw new ConfigError(
      'Invalid configuration: IDEMPOTENCY_TTL_MS must be greater than IDEMPOTENCY_IN_FLIGHT_MS',
    );
  }
  const identity = identityConfig(e);
  if (typeof identity === 'string') throw new ConfigError(`Invalid configuration: ${identity}`);
  const store: StoreConfig = e.DATABASE_URL.startsWith('file:')
    ? { kind: 'sqlite', path: e.DATABASE_URL.slice('file:'.length) }
    : {
        kind: 'postgres',
        url: e.DATABASE_URL,
        poolSize: e.DATABASE_POOL_SIZE,
        timeoutMs: e.DATABASE_TIMEOUT_MS,
      };
  return {
    port: e.PORT,
    host: e.HOST,
    http: {
      headersTimeoutMs: e.HTTP_HEADERS_TIMEOUT_MS,
      requestTimeoutMs: e.HTTP_REQUEST_TIMEOUT_MS,
      keepAliveTimeoutMs: e.HTTP_KEEP_ALIVE_TIMEOUT_MS,
      shutdownGraceMs: e.SHUTDOWN_GRACE_MS,
    },
    rateLimit:
      e.RATE_LIMIT_MAX === 0
        ? undefined
        : { points: e.RATE_LIMIT_MAX, windowSeconds: e.RATE_LIMIT_WINDOW_SECONDS },
    authFailureLimit:
      e.AUTH_FAILURE_MAX === 0
        ? undefined
        : { points: e.AUTH_FAILURE_MAX, windowSeconds: e.RATE_LIMIT_WINDOW_SECONDS },
    redisUrl: e.REDIS_URL,
    redisTimeoutMs: e.REDIS_TIMEOUT_MS,
    corsOrigins: e.CORS_ORIGINS,
    tokenRefreshMs: e.TOKEN_REFRESH_MS,
    identity,
    store,
    idempotency: { ttlMs: e.IDEMPOTENCY_TTL_MS, inFlightMs: e.IDEMPOTENCY_IN_FLIGHT_MS },
    webhooks: webhookConfig(e),
    webhookEndpoints: {
      secretsKey:
        e.WEBHOOK_SECRETS_KEY === undefined ? undefined : Buffer.from(e.WEBHOOK_SECRETS_KEY, 'base64'),
      secretOverlapMs: e.WEBHOOK_SECRET_OVERLAP_MS,
      allowPrivateUrls: e.WEBHOOK_ALLOW_PRIVATE_URLS === '1',
      perToken: e.WEBHOOK_ENDPOINTS_PER_TOKEN,
      pendingPerEndpoint: e.WEBHOOK_PENDING_PER_ENDPOINT,
      dns: {
        servers: e.WEBHOOK_DNS_SERVERS,
        timeoutMs: e.WEBHOOK_DNS_TIMEOUT_MS,
        concurrency: e.WEBHOOK_DNS_CONCURRENCY,
        perTokenConcurrency: e.WEBHOOK_DNS_CONCURRENCY_PER_TOKEN,
      },
    },
    events: {
      retentionMs: e.EVENTS_RETENTION_MS,
      maxStreams: e.EVENT_STREAMS_MAX,
      maxStreamsPerToken: e.EVENT_STREAMS_PER_TOKEN,
      buffer: e.EVENT_STREAM_BUFFER,
      heartbeatMs: e.EVENTS_HEARTBEAT_MS,
      pollMs: e.EVENTS_POLL_MS,
      maxReplay: e.EVENTS_REPLAY_MAX,
    },
    apiTokens: e.API_TOKENS,
    logLevel: e.LOG_LEVEL,
    production: e.NODE_ENV === 'production',
    tracing: tracingConfig(e),
  };
}

/** On only with an endpoint: a service that was not told where to send spans makes none. */
function tracingConfig(e: z.infer<typeof EnvSchema>): TracingConfig | undefined {
  if (e.OTEL_SDK_DISABLED) return undefined;
  const base = e.OTEL_EXPORTER_OTLP_ENDPOINT;
  const url = e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? (base && `${base.replace(/\/+$/, '')}/v1/traces`);
  if (url === undefined) return undefined;
  return {
    url,
    protocol: e.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? e.OTEL_EXPORTER_OTLP_PROTOCOL,
    serviceName: e.OTEL_SERVICE_NAME,
    sampler: { name: e.OTEL_TRACES_SAMPLER, ratio: e.OTEL_TRACES_SAMPLER_ARG ?? 1 },
    scheduleDelayMs: e.OTEL_BSP_SCHEDULE_DELAY,
    maxQueueSize: e.OTEL_BSP_MAX_QUEUE_SIZE,
    maxExportBatchSize: Math.min(e.OTEL_BSP_MAX_EXPORT_BATCH_SIZE, e.OTEL_BSP_MAX_QUEUE_SIZE),
  };
}

function webhookConfig(e: z.infer<typeof EnvSchema>): WebhookConfig {
  if (e.WEBHOOK_URLS.length > 0 && e.WEBHOOK_SECRET === undefined) {
    throw new ConfigError(
      'Invalid configuration: WEBHOOK_SECRET is required when WEBHOOK_URLS is set (deliveries are signed)',
    );
  }
  // An attempt still running when its lease ends could be claimed and sent again by another worker.
  if (e.WEBHOOK_LEASE_MS <= e.WEBHOOK_TIMEOUT_MS) {
    throw new ConfigError('Invalid configuration: WEBHOOK_LEASE_MS must be greater than WEBHOOK_TIMEOUT_MS');
  }
  if (e.WEBHOOK_BACKOFF_MAX_MS < e.WEBHOOK_BACKOFF_BASE_MS) {
    throw new ConfigError(
      'Invalid configuration: WEBHOOK_BACKOFF_MAX_MS must be at least WEBHOOK_BACKOFF_BASE_MS',
    );
  }
  return {
    urls: e.WEBHOOK_URLS,
    ...(e.WEBHOOK_URLS.length > 0 && { secret: e.WEBHOOK_SECRET }),
    timeoutMs: e.WEBHOOK_TIMEOUT_MS,
    maxAttempts: e.WEBHOOK_MAX_ATTEMPTS,
    backoffBaseMs: e.WEBHOOK_BACKOFF_BASE_MS,
    backoffMaxMs: e.WEBHOOK_BACKOFF_MAX_MS,
    pollIntervalMs: e.WEBHOOK_POLL_INTERVAL_MS,
    leaseMs: e.WEBHOOK_LEASE_MS,
    concurrency: e.WEBHOOK_CONCURRENCY,
    breaker: { failures: e.WEBHOOK_BREAKER_FAILURES, cooldownMs: e.WEBHOOK_BREAKER_COOLDOWN_MS },
    retentionMs: e.WEBHOOK_RETENTION_MS,
    failedRetentionMs: e.WEBHOOK_FAILED_RETENTION_MS,
  };
}

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
