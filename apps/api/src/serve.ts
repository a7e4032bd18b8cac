import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { dirname, join, resolve } from 'node:path';
import type { Logger } from 'pino';
import { createApp } from './app.ts';
import { createTokenVerifier, newTokenSecret } from './auth.ts';
import type { Config } from './config.ts';
import { createRateLimiter } from './http/rate-limit.ts';
import { createMetrics } from './metrics.ts';
import type { PlantStore } from './store/store.ts';
import { type DeliveryWorker, startDeliveryWorker } from './webhooks/worker.ts';

/** API_TOKENS and the generated token may do everything. */
const ALL_SCOPES = ['read', 'write'] as const;

/**
 * Serves the api on `store` until SIGTERM/SIGINT: then stops accepting, lets in-flight requests and
 * webhook attempts finish (within SHUTDOWN_GRACE_MS), closes the store and exits 0.
 */
export async function serve(config: Config, store: PlantStore, log: Logger, where: string): Promise<void> {
  const configured = (config.apiTokens ?? []).map((secret, i) => ({
    name: `api-token-${i + 1}`,
    secret,
    scopes: ALL_SCOPES,
  }));
  // With no API_TOKENS an SQLite service still starts authenticated: see generatedToken.
  if (config.apiTokens === undefined && config.store.kind === 'sqlite') {
    configured.push({ name: 'generated', secret: generatedToken(config.store.path), scopes: ALL_SCOPES });
  }
  const verifier = createTokenVerifier(configured);
  // Issued tokens (`main.js token create`) are reloaded every TOKEN_REFRESH_MS on every instance:
  // the bound on a new token or a revocation taking effect.
  const refreshTokens = async () => verifier.setIssued(await store.tokens.active());
  await refreshTokens();
  const refresher = setInterval(() => {
    refreshTokens().catch((error: unknown) => log.warn({ reason: String(error) }, 'could not reload tokens'));
  }, config.tokenRefreshMs).unref();
  if (configured.length === 0 && (await store.tokens.active()).length === 0) {
    log.warn('no API_TOKENS and no issued tokens: every request will be answered 401 until `token create`');
  }

  // Loaded only when configured, like the PostgreSQL driver.
  const redis = config.redisUrl
    ? new (await import('ioredis')).Redis(config.redisUrl, {
        enableOfflineQueue: false,
        maxRetriesPerRequest: 1,
      })
    : undefined;
  redis?.on('error', (error) =>
    log.warn({ reason: error.message }, 'redis unavailable; rate limits fall back to memory'),
  );
  // One registry for the app's metrics and the webhook worker's, served at /metrics.
  const metrics = createMetrics(() => store.deliveries.counts().catch(() => undefined));
  const app = createApp({
    store,
    tokens: [],
    verifier,
    log,
    metrics,
    publicUrl: `http://${config.host}:${config.port}`,
    corsOrigins: config.corsOrigins,
    ...(config.rateLimit && {
      rateLimit: { limiter: createRateLimiter(config.rateLimit, redis), limit: config.rateLimit },
    }),
  });

  const server = createServer(
    {
      headersTimeout: config.http.headersTimeoutMs,
      requestTimeout: config.http.requestTimeoutMs,
      keepAliveTimeout: config.http.keepAliveTimeoutMs,
      // How often node:http enforces the two timeouts above (its default is 30 s).
      connectionsCheckingInterval: Math.min(1_000, config.http.headersTimeoutMs),
    },
    app.callback(),
  );
  let stopping = false;
  let worker: DeliveryWorker | undefined;
  server.listen(config.port, config.host, () => {
    const address = server.address();
    const port = typeof address === 'object' && address !== null ? address.port : config.port;
    log.info({ url: `http://${config.host}:${port}`, store: where }, 'listening');
    if (config.webhooks && !stopping) {
      worker = startDeliveryWorker({ outbox: store.deliveries, config: config.webhooks, log, metrics });
      log.info({ subscribers: config.webhooks.urls.length }, 'webhook worker started');
    }
  });

  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down');
    const grace = config.http.shutdownGraceMs;
    const force = setTimeout(() => server.closeAllConnections(), grace).unref();
    // The worker finishes its attempts in flight (within the grace) while requests drain.
    const workerStopped = worker?.stop(grace);
    server.close(async () => {
      clearTimeout(force);
      clearInterval(refresher);
      await workerStopped;
      await store.close();
      redis?.disconnect();
      log.info('stopped');
      log.flush();
      process.exit(0);
    });
    server.closeIdleConnections();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

/**
 * With no API_TOKENS, the service still starts authenticated: a token is generated on first start,
 * saved beside the database (mode 0600) and reused on later starts. Its value is never logged.
 */
function generatedToken(sqlitePath: string): string {
  const file = join(dirname(resolve(sqlitePath)), 'api-token');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  mkdirSync(dirname(file), { recursive: true });
  const token = newTokenSecret();
  writeFileSync(file, `${token}\n`, { mode: 0o600, flag: 'wx' });
  process.stderr.write(`No API_TOKENS set: generated a bearer token and saved it to ${file}\n`);
  return token;
}
