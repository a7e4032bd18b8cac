import { createServer, type Server } from 'node:http';
import { dirname, join, resolve } from 'node:path';
import type { Tracer } from '@opentelemetry/api';
import type { Redis } from 'ioredis';
import type Koa from 'koa';
import type { Logger } from 'pino';
import { createApp } from './app.ts';
import { configuredTokenName, createTokenVerifier, type TokenVerifier } from './auth/tokens.ts';
import { ALL_SCOPES } from './auth/scopes.ts';
import { type Config, describeStore } from './config/config.ts';
import { generatedToken } from './auth/generated-token.ts';
import { droppedLogLines } from './observability/log.ts';
import { createEventHub, type EventHub } from './events/hub.ts';
import { type Pruning, startPruning } from './store/pruning.ts';
import { createRateLimiter } from './http/rate-limit.ts';
import { createMetrics, type Metrics, setRateLimitBackend } from './observability/metrics.ts';
import { ownerLookup, streamMayContinue } from './auth/principals.ts';
import { createJwtVerifier, type JwtVerifier } from './auth/jwt-verifier.ts';
import type { PlantStore } from './store/contract.ts';
import { MISSED_RELOADS_BEFORE_REFUSAL, startTokenRefresh, type TokenRefresh } from './auth/token-refresh.ts';
import { traceRedis } from './tracing/traced-redis.ts';
import { createEndpointResolver } from './webhooks/dns.ts';
import type { EndpointSettings } from './webhooks/endpoints.ts';
import { generatedSecretsKey, secretBox } from './webhooks/secrets.ts';
import { type DeliveryWorker, startDeliveryWorker } from './webhooks/worker.ts';

/** The api serving one store on one port, until `close()`. Exiting the process is main.ts's. */
export type RunningServer = {
  /** Where it listens: the configured port, or the one chosen for port 0. */
  url: string;
  /**
   * Resolves, with the cause, once the store has failed for good (`PlantStore.failed`), after the
   * work that needs it has been stopped: webhook attempts in flight are cut short and token reloads
   * end. Requests are still answered (503 for anything that needs the store) until `close()`.
   */
  failed: Promise<Error>;
  /**
   * Stops accepting, lets in-flight requests and webhook attempts finish within `graceMs` (default
   * SHUTDOWN_GRACE_MS; 0 cuts connections at once, even in a shutdown already under way), then stops token reloads, closes the store and
   * disconnects Redis. Logs `shutting down` with `signal` (what asked for it) and `stopped`. Calling
   * it again returns the same promise.
   */
  close(signal?: string, graceMs?: number): Promise<void>;
};

/**
 * Serves the api on `store`: the tokens, metrics, Redis, the app, the HTTP server and the webhook
 * worker, each wired by one step below, in this order. Rejects when it cannot listen (a port in
 * use, an address not on this host); the store stays the caller's to close then. With a `tracer`
 * (tracing on), requests, store calls, Redis commands, webhook attempts and event fan-outs make spans.
 */
export async function startServer(
  config: Config,
  {
    store,
    log,
    webAppDir,
    tracer,
  }: { store: PlantStore; log: Logger; webAppDir?: string; tracer?: Tracer | undefined },
): Promise<RunningServer> {
  const events = createEventHub(store.events, config.events, log, tracer);
  const { verifier, jwt, refresher } = await startTokens(config, store, log, events);
  const metrics = createMetrics({
    outboxDepth: (options) => store.deliveries.depth(options).catch(() => undefined),
    droppedLogLines: () => droppedLogLines(log),
  });
  const redis = await connectRedis(config, log, metrics);
  if (redis && tracer) traceRedis(redis, tracer);
  const endpoints = endpointSettings(config, log);
  // The OpenAPI document names the address actually listened on (PORT=0 picks one).
  let url = `http://${config.host}:${config.port}`;
  const publicUrl = () => url;
  const server = createHttpServer(
    config,
    buildApp(config, {
      store,
      verifier,
      jwt,
      log,
      metrics,
      redis,
      events,
      endpoints,
      publicUrl,
      webAppDir,
      tracer,
    }),
  );
  try {
    url = await listen(server, config);
  } catch (error) {
    refresher.stop();
    redis?.disconnect();
    throw error;
  }
  log.info({ url, store: describeStore(config.store) }, 'listening');
  const worker = startWorker(config, { store, log, metrics, endpoints, verifier, jwt, tracer });
  const pruning = startPruning({
    what: 'idempotency keys',
    prune: (batch) => store.idempotencyKeys.prune(batch),
    olderThanMs: config.idempotency.ttlMs,
    log,
  });
  const eventPruning = startPruning({
    what: 'events',
    prune: (batch) => store.events.prune(batch),
    olderThanMs: config.events.retentionMs,
    log,
  });

  const failed = store.failed.then((error) => {
    void worker?.stop(0);
    void pruning.stop();
    refresher.stop();
    void eventPruning.stop();
    return error;
  });
  let closed: Promise<void> | undefined;
  const close = (signal = 'close', graceMs = config.http.shutdownGraceMs) => {
    if (closed && graceMs === 0) server.closeAllConnections();
    closed ??= shutDown(
      { server, worker, pruning, eventPruning, refresher, events, store, redis, log },
      signal,
      graceMs,
    );
    return closed;
  };
  return { url, failed, close };
}

/**
 * The verifier with API_TOKENS (or, with none on SQLite, the generated token) and the issued
 * tokens, loaded now and then reloaded every TOKEN_REFRESH_MS on every instance: the bound on a new
 * token or a revocation taking effect, on requests and (after each reload) on open event streams.
 * Past a few missed reloads issued tokens are refused, as a revocation may be among the changes not
 * seen. Configured tokens are named by their digests (`configuredTokenName`).
 */
async function startTokens(
  config: Config,
  store: PlantStore,
  log: Logger,
  events: EventHub,
): Promise<{ verifier: TokenVerifier; jwt: JwtVerifier | undefined; refresher: TokenRefresh }> {
  const secrets = [...(config.apiTokens ?? [])];
  // With no API_TOKENS an SQLite service still starts authenticated: see generatedToken.
  if (config.apiTokens === undefined && config.store.kind === 'sqlite') {
    secrets.push(generatedToken(join(dirname(resolve(config.store.path)), 'api-token')));
  }
  const configured = secrets.map((secret) => ({
    name: configuredTokenName(secret),
    secret,
    scopes: ALL_SCOPES,
  }));
  const verifier = createTokenVerifier(configured, {
    issuedMaxAgeMs: MISSED_RELOADS_BEFORE_REFUSAL * config.tokenRefreshMs,
  });
  const jwt =
    config.identity.issuers.length === 0
      ? undefined
      : createJwtVerifier(config.identity, {
          blockedMaxAgeMs: MISSED_RELOADS_BEFORE_REFUSAL * config.tokenRefreshMs,
        });
  const refresher = await startTokenRefresh({
    verifier,
    // Blocked principals ride on the same reload: the same bound, and the same failing closed.
    load: async () => {
      const [issued, blocked] = await Promise.all([
        store.tokens.active(),
        jwt && store.principals.blockedNames(),
      ]);
      if (blocked !== undefined) jwt?.setBlocked(blocked);
      return issued;
    },
    intervalMs: config.tokenRefreshMs,
    log,
    // A revoked token's (or blocked principal's) streams end with the reload that drops it.
    onReload: () => events.retain((name) => streamMayContinue(verifier, name, jwt)),
  });
  if (configured.length === 0 && jwt === undefined && (await store.tokens.active()).length === 0) {
    log.warn('no API_TOKENS and no issued tokens: every request will be answered 401 until `token create`');
  }
  return { verifier, jwt, refresher };
}

/** The shared rate-limit counters, when REDIS_URL is set. Loaded only then, like the PostgreSQL driver. */
async function connectRedis(config: Config, log: Logger, metrics: Metrics): Promise<Redis | undefined> {
  if (!config.redisUrl) return undefined;
  return (await import('./http/rate-limit-redis.ts')).connectRedis(config.redisUrl, {
    timeoutMs: config.redisTimeoutMs,
    log,
    onBackend: (backend) => setRateLimitBackend(metrics, backend),
  });
}

/** The Koa app, with the configured rate limits (in Redis when connected, else in memory). */
function buildApp(
  config: Config,
  parts: {
    store: PlantStore;
    verifier: TokenVerifier;
    jwt: JwtVerifier | undefined;
    log: Logger;
    metrics: Metrics;
    redis: Redis | undefined;
    events: EventHub;
    endpoints: EndpointSettings;
    publicUrl: () => string;
    webAppDir: string | undefined;
    tracer: Tracer | undefined;
  },
): Koa {
  const { store, verifier, jwt, log, metrics, redis, events, endpoints, publicUrl, webAppDir, tracer } =
    parts;
  return createApp({
    ...(jwt && { jwt }),
    issuers: config.identity.issuers,
    webAppDir,
    ...(tracer && {
      tracing: { tracer, dbSystem: config.store.kind === 'postgres' ? 'postgresql' : 'sqlite' },
    }),
    store,
    verifier,
    log,
    metrics,
    publicUrl,
    corsOrigins: config.corsOrigins,
    webhookUrls: config.webhooks.urls,
    webhookEndpoints: endpoints,
    events: { hub: events, heartbeatMs: config.events.heartbeatMs },
    idempotency: config.idempotency,
    ...(config.rateLimit && {
      rateLimit: { limiter: createRateLimiter(config.rateLimit, redis), limit: config.rateLimit },
    }),
    ...(config.authFailureLimit && {
      authFailures: {
        limiter: createRateLimiter(config.authFailureLimit, redis, 'auth-failures'),
        limit: config.authFailureLimit,
      },
    }),
  });
}

function createHttpServer(config: Config, app: Koa): Server {
  return createServer(
    {
      headersTimeout: config.http.headersTimeoutMs,
      requestTimeout: config.http.requestTimeoutMs,
      keepAliveTimeout: config.http.keepAliveTimeoutMs,
      // How often node:http enforces the two timeouts above (its default is 30 s).
      connectionsCheckingInterval: Math.min(1_000, config.http.headersTimeoutMs),
    },
    app.callback(),
  );
}

/** Listens on HOST:PORT and returns the url; rejects on a listen error. */
async function listen(server: Server, config: Config): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : config.port;
  return `http://${config.host}:${port}`;
}

/**
 * The webhook endpoints' settings, with the key that seals their secrets: WEBHOOK_SECRETS_KEY, or
 * on SQLite one generated once into `webhook-secrets.key` beside the database. On PostgreSQL
 * without it there is none (instances must share one): the endpoint operations answer 503.
 */
function endpointSettings(config: Config, log: Logger): EndpointSettings {
  const { secretsKey, allowPrivateUrls, perToken, secretOverlapMs, pendingPerEndpoint, dns } =
    config.webhookEndpoints;
  let key = secretsKey;
  if (key === undefined && config.store.kind === 'sqlite') {
    key = generatedSecretsKey(join(dirname(resolve(config.store.path)), 'webhook-secrets.key'));
  }
  if (key === undefined) {
    log.warn(
      'no WEBHOOK_SECRETS_KEY: webhook endpoint operations answer 503 and endpoints get no deliveries (plants work)',
    );
  }
  return {
    box: key && secretBox(key),
    policy: { allowPrivate: allowPrivateUrls },
    perToken,
    overlapMs: secretOverlapMs,
    pendingPerEndpoint,
    resolver: createEndpointResolver(dns),
    dnsTimeoutMs: dns.timeoutMs,
  };
}

/**
 * The webhook delivery worker: to the WEBHOOK_URLS subscribers and the registered endpoints, these
 * only while their owners are active tokens with `read` (docs/principals.md).
 */
function startWorker(
  config: Config,
  parts: {
    store: PlantStore;
    log: Logger;
    metrics: Metrics;
    endpoints: EndpointSettings;
    verifier: TokenVerifier;
    jwt: JwtVerifier | undefined;
    tracer: Tracer | undefined;
  },
): DeliveryWorker {
  const { store, log, metrics, endpoints, verifier, jwt, tracer } = parts;
  const worker = startDeliveryWorker({
    outbox: store.deliveries,
    config: config.webhooks,
    log,
    metrics,
    ...(tracer && { tracer }),
    endpoints: {
      store: store.webhookEndpoints,
      settings: endpoints,
      owner: ownerLookup(verifier, store.tokens, jwt),
    },
  });
  if (config.webhooks.urls.length > 0) {
    log.info({ subscribers: config.webhooks.urls.length }, 'webhook worker started');
  }
  return worker;
}

/** The graceful shutdown that `RunningServer.close` describes. */
async function shutDown(
  parts: {
    server: Server;
    worker: DeliveryWorker | undefined;
    pruning: Pruning;
    eventPruning: Pruning;
    refresher: TokenRefresh;
    events: EventHub;
    store: PlantStore;
    redis: Redis | undefined;
    log: Logger;
  },
  signal: string,
  graceMs: number,
): Promise<void> {
  const { server, worker, pruning, eventPruning, refresher, events, store, redis, log } = parts;
  log.info({ signal }, 'shutting down');
  // Event streams end now, cleanly: their clients resume on another instance.
  events.close();
  if (graceMs === 0) server.closeAllConnections();
  const force = setTimeout(() => server.closeAllConnections(), graceMs).unref();
  // The worker finishes its attempts in flight (within the grace) while requests drain.
  const workerStopped = worker?.stop(graceMs);
  const drained = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  await drained;
  clearTimeout(force);
  refresher.stop();
  await Promise.all([workerStopped, pruning.stop(), eventPruning.stop()]);
  await store.close();
  redis?.disconnect();
  log.info('stopped');
}
