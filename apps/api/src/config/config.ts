import { resolve } from 'node:path';
import type { z } from 'zod';
import type { EventHubLimits } from '../events/hub.ts';
import { EnvSchema, type LOG_LEVELS, type TRACES_SAMPLERS } from './env.ts';
import { type IdentityConfig, identityConfig } from './identity.ts';

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
/** How long Idempotency-Keys are kept, and how long a claim may stay in flight (operations/idempotency.ts). */
export type IdempotencyPolicy = {
  /** How long a key, and the answer stored with it, is kept (IDEMPOTENCY_TTL_MS). */
  ttlMs: number;
  /** How long a claim may stay in flight before a repeat takes it over (IDEMPOTENCY_IN_FLIGHT_MS). */
  inFlightMs: number;
};

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
