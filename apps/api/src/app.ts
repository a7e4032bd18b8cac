import Koa from 'koa';
import type { Logger } from 'pino';
import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import { type AuthResult, createTokenVerifier, type Scope, type TokenVerifier } from './auth.ts';
import { authMiddleware } from './http/auth.ts';
import { corsMiddleware } from './http/cors.ts';
import { docsMiddleware } from './http/docs.ts';
import { errorMiddleware } from './http/errors.ts';
import { healthMiddleware } from './http/health.ts';
import { metricsMiddleware } from './http/metrics.ts';
import { observeMiddleware } from './http/observe.ts';
import { type RateLimit, rateLimitMiddleware } from './http/rate-limit.ts';
import { restAdapter, restRoutes } from './http/rest.ts';
import { trpcAdapter } from './http/trpc.ts';
import { createMetrics, instrumentStore, type Metrics } from './metrics.ts';
import { appRouter } from './router.ts';
import type { PlantStore } from './store/store.ts';
import type { Context } from './trpc.ts';

export type AppOptions = {
  store: PlantStore;
  tokens: readonly { name: string; secret: string; scopes: readonly Scope[] }[];
  log: Logger;
  /** The URL clients reach this server at, for the OpenAPI document's `servers`. */
  publicUrl: string;
  /** Checks bearer tokens; by default one built from `tokens`. */
  verifier?: TokenVerifier;
  /** Where request and store metrics go; a fresh registry by default. */
  metrics?: Metrics;
  /** Per-token rate limiting of the API routes; none by default. */
  rateLimit?: { limiter: RateLimiterAbstract; limit: RateLimit };
  /** Browser origins allowed by CORS; none by default. */
  corsOrigins?: readonly string[];
};

/**
 * Builds the Koa application; it does not listen. `app.callback()` is a plain node:http handler.
 * Order: observe (ids, headers, log, metrics) → errors → CORS → token check → public routes →
 * rate limit → tRPC → REST.
 */
export function createApp(options: AppOptions): Koa {
  const { tokens, log, publicUrl, rateLimit, corsOrigins = [] } = options;
  const metrics = options.metrics ?? createMetrics();
  const store = instrumentStore(options.store, metrics);
  const verifier = options.verifier ?? createTokenVerifier(tokens);
  const createContext = (auth: AuthResult): Context => ({ store, auth });
  const routes = restRoutes(appRouter);
  // Built on first request, from a chunk loaded then: start-up does not pay for zod-openapi.
  let documentJson: Promise<string> | undefined;
  const openApiJson = () =>
    (documentJson ??= import('./http/openapi.ts').then(({ openApiDocument }) =>
      JSON.stringify(openApiDocument(routes, publicUrl)),
    ));

  const app = new Koa();
  app.silent = true;
  app.use(observeMiddleware(log, metrics));
  app.use(errorMiddleware(log));
  if (corsOrigins.length > 0) app.use(corsMiddleware(corsOrigins));
  app.use(authMiddleware(verifier));
  app.use(async (ctx, next) => {
    if (ctx.path !== '/openapi.json' || ctx.method !== 'GET') return next();
    ctx.state.route = ctx.path;
    ctx.type = 'application/json';
    ctx.body = await openApiJson();
  });
  app.use(docsMiddleware());
  app.use(healthMiddleware(store));
  app.use(metricsMiddleware(metrics));
  if (rateLimit) app.use(rateLimitMiddleware(rateLimit.limiter, rateLimit.limit));
  app.use(trpcAdapter(appRouter, createContext, log));
  app.use(restAdapter(routes, { store }));
  return app;
}
