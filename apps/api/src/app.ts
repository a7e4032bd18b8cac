import type { Tracer } from '@opentelemetry/api';
import Koa from 'koa';
import type { Logger } from 'pino';
import { type RateLimiterAbstract, RateLimiterRedis } from 'rate-limiter-flexible';
import type { TokenVerifier } from './auth/tokens.ts';
import { loadConfig } from './config/config.ts';
import { createEventHub, type EventHub } from './events/hub.ts';
import { createHeavyReads } from './operations/heavy-reads.ts';
import { authMiddleware } from './auth/token-check.ts';
import type { JwtVerifier } from './auth/jwt-verifier.ts';
import { authFailureMiddleware } from './auth/auth-failures.ts';
import { corsMiddleware } from './http/cors.ts';
import { docsPaths } from './http/docs.ts';
import { errorMiddleware } from './http/error-middleware.ts';
import { healthPaths } from './http/health.ts';
import { metricsPaths } from './http/metrics-path.ts';
import { observeMiddleware } from './http/observe.ts';
import { ownPaths, servePaths } from './http/own-paths.ts';
import { type RateLimit, rateLimitMiddleware } from './http/rate-limit.ts';
import { type CreateContext, restAdapter, restRoutes } from './http/rest.ts';
import { traceMiddleware } from './http/trace-middleware.ts';
import { trpcPaths } from './trpc/http-adapter.ts';
import { webAppPaths } from './http/web-app.ts';
import { authProviderPaths, signInProvider } from './http/auth-provider.ts';
import type { IssuerConfig } from './config/identity.ts';
import { DEFAULT_IDEMPOTENCY_POLICY, type IdempotencyPolicy } from './operations/idempotency.ts';
import { createMetrics, instrumentStore, type Metrics } from './observability/metrics.ts';
import type { PlantStore } from './store/contract.ts';
import { storeTracer } from './tracing/traced-store.ts';
import { withRequestSpan } from './tracing/traced-redis.ts';
import type { DbSystem } from './store/contract.ts';
import type { EndpointSettings } from './webhooks/endpoints.ts';
import { newPlantWebhook } from './webhooks/event.ts';

export type AppOptions = {
  store: PlantStore;
  log: Logger;
  /**
   * The URL clients reach this server at, for the OpenAPI document's `servers`; a function is asked
   * when the document is first served (once the server listens).
   */
  publicUrl: string | (() => string);
  /** Checks bearer tokens (`createTokenVerifier`). */
  verifier: TokenVerifier;
  /** Checks JWT access tokens of the configured identity providers (`createJwtVerifier`); none by default. */
  jwt?: JwtVerifier;
  /** The configured identity providers, for `GET /auth/provider`; none by default. */
  issuers?: readonly IssuerConfig[];
  /** Where request and store metrics go; a fresh registry by default. */
  metrics?: Metrics;
  /** Per-token rate limiting of the API routes and /metrics; none by default. */
  rateLimit?: { limiter: RateLimiterAbstract; limit: RateLimit };
  /** Per-address limit on failed authentications, on every route that checks a token; none by default. */
  authFailures?: { limiter: RateLimiterAbstract; limit: RateLimit };
  /** Browser origins allowed by CORS; none by default. */
  corsOrigins?: readonly string[];
  /** Subscribers of the new-plant webhook (`WEBHOOK_URLS`): a create enqueues one delivery each; none by default. */
  webhookUrls?: readonly string[];
  /** Webhook endpoints' settings; without them the endpoint operations answer 503. */
  webhookEndpoints?: EndpointSettings;
  /** The event streams' hub and heartbeat; by default a hub on `store` with the default limits. */
  events?: { hub: EventHub; heartbeatMs: number };
  /** How Idempotency-Keys are kept (IDEMPOTENCY_TTL_MS, IDEMPOTENCY_IN_FLIGHT_MS); the defaults when omitted. */
  idempotency?: IdempotencyPolicy;
  /** The plant console's built files, served under /app/; `dist/app` beside the bundle by default. */
  webAppDir?: string;
  /** With tracing on: a span per request and per store call (`db.system` names the store). */
  tracing?: { tracer: Tracer; dbSystem: DbSystem };
};

/**
 * Builds the Koa application; it does not listen. `app.callback()` is a plain node:http handler.
 * Order: trace (with tracing on) → observe (ids, headers, log, metrics) → errors → CORS → token check → public routes (the
 * document, /docs, the console under /app/, probes) → failed-authentication limit → rate limit →
 * /metrics → tRPC → REST: every route that checks a token runs after both limits.
 */
export function createApp(options: AppOptions): Koa {
  const { verifier, log, publicUrl, rateLimit, authFailures, corsOrigins = [] } = options;
  const idempotency = options.idempotency ?? DEFAULT_IDEMPOTENCY_POLICY;
  const metrics = options.metrics ?? createMetrics();
  const store = instrumentStore(options.store, metrics);
  const { tracing } = options;
  // With tracing on, each traced request sees the store through its own span (tracing/traced-store.ts).
  const storeFor = tracing && storeTracer(store, tracing.tracer, tracing.dbSystem);
  const webhooks = newPlantWebhook(options.webhookUrls);
  const { hub: events, heartbeatMs } = options.events ?? defaultEvents(options.store, log);
  const endpoints = options.webhookEndpoints;
  const heavyReads = createHeavyReads();
  const createContext: CreateContext = (auth, request) => ({
    store: storeFor ? storeFor(request.span) : store,
    webhooks,
    events,
    endpoints,
    heavyReads,
    idempotency,
    auth,
    request,
  });
  const routes = restRoutes();
  // Built on first request, from a chunk loaded then: start-up does not pay for zod-openapi.
  let documentJson: Promise<string> | undefined;
  const openApiJson = () =>
    (documentJson ??= import('./http/openapi.ts').then(({ openApiDocument }) =>
      JSON.stringify(openApiDocument(routes, typeof publicUrl === 'function' ? publicUrl() : publicUrl)),
    ));

  const app = new Koa();
  app.silent = true;
  // Outermost: the access log line and everything below run inside the request's span.
  if (tracing) app.use(traceMiddleware(tracing.tracer, log));
  app.use(observeMiddleware(log, metrics));
  app.use(errorMiddleware(log));
  if (corsOrigins.length > 0) {
    app.use(corsMiddleware(corsOrigins, [...new Set(routes.map((route) => route.method))]));
  }
  app.use(authMiddleware(verifier, options.jwt));
  const openApi = ownPaths(
    (path) => path === '/openapi.json',
    async (ctx, next) => {
      if (ctx.method !== 'GET' && ctx.method !== 'HEAD') return next();
      ctx.state.route = ctx.path;
      ctx.type = 'application/json';
      ctx.body = await openApiJson();
    },
  );
  // The public paths, then (after the limits) /metrics and /trpc, each set in one middleware.
  app.use(
    servePaths(
      openApi,
      docsPaths(),
      webAppPaths(options.webAppDir, signInOrigin(options.issuers ?? [])),
      healthPaths(store),
      authProviderPaths(options.issuers ?? []),
    ),
  );
  // With Redis, a limiter sends its command synchronously: it is a child of the request's span. In
  // memory it sends none, and runs as it is.
  const limiting = (limiter: RateLimiterAbstract, middleware: Koa.Middleware): Koa.Middleware =>
    tracing && limiter instanceof RateLimiterRedis ? withRequestSpan(middleware) : middleware;
  if (authFailures) {
    app.use(limiting(authFailures.limiter, authFailureMiddleware(authFailures.limiter, authFailures.limit)));
  }
  if (rateLimit)
    app.use(limiting(rateLimit.limiter, rateLimitMiddleware(rateLimit.limiter, rateLimit.limit)));
  app.use(servePaths(metricsPaths(metrics), trpcPaths(createContext, log)));
  app.use(restAdapter(routes, createContext, { heartbeatMs }));
  return app;
}

function defaultEvents(store: PlantStore, log: Logger): { hub: EventHub; heartbeatMs: number } {
  const { heartbeatMs, ...limits } = loadConfig({}).events;
  return { hub: createEventHub(store.events, limits, log), heartbeatMs };
}

/** The origin of the provider the console signs in with, if any. */
function signInOrigin(issuers: readonly IssuerConfig[]): string | undefined {
  const provider = signInProvider(issuers);
  return provider && new URL(provider.issuer).origin;
}
