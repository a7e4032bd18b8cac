import Koa, { type Middleware } from 'koa';
import type { Logger } from 'pino';
import { type AuthResult, createTokenVerifier, type Scope } from './auth.ts';
import { authMiddleware } from './http/auth.ts';
import { errorMiddleware } from './http/errors.ts';
import { observeMiddleware } from './http/observe.ts';
import { openApiDocument } from './http/openapi.ts';
import { restAdapter, restRoutes } from './http/rest.ts';
import { storeCall } from './operation.ts';
import { trpcAdapter } from './http/trpc.ts';
import { appRouter } from './router.ts';
import type { PlantStore } from './store/store.ts';
import type { Context } from './trpc.ts';

export type AppOptions = {
  store: PlantStore;
  tokens: readonly { name: string; secret: string; scopes: readonly Scope[] }[];
  log: Logger;
  /** The URL clients reach this server at, for the OpenAPI document's `servers`. */
  publicUrl: string;
};

/** Builds the Koa application; it does not listen. `app.callback()` is a plain node:http handler. */
export function createApp({ store, tokens, log, publicUrl }: AppOptions): Koa {
  const verifyToken = createTokenVerifier(tokens);
  const createContext = (auth: AuthResult): Context => ({ store, auth });
  const routes = restRoutes(appRouter);
  const documentJson = JSON.stringify(openApiDocument(routes, publicUrl));

  const app = new Koa();
  app.silent = true;
  app.use(observeMiddleware(log));
  app.use(errorMiddleware(log));
  app.use(authMiddleware(verifyToken));
  app.use(trpcAdapter(appRouter, createContext, log));
  app.use(async (ctx, next) => {
    if (ctx.path !== '/openapi.json' || ctx.method !== 'GET') return next();
    ctx.type = 'application/json';
    ctx.body = documentJson;
  });
  app.use(healthMiddleware(store));
  app.use(restAdapter(routes, { store }));
  return app;
}

const OK = JSON.stringify({ status: 'ok' });

/**
 * Unauthenticated probes for load balancers and orchestrators. `GET /healthz`: the process is up
 * (never touches the store). `GET /readyz`: the store answers a query, else 503 with an `Error` body
 * from the error middleware, within the store's own time bound (`DATABASE_TIMEOUT_MS`).
 */
function healthMiddleware(store: PlantStore): Middleware {
  return async (ctx, next) => {
    if (ctx.path !== '/healthz' && ctx.path !== '/readyz') return next();
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
      ctx.set('Allow', 'GET, HEAD');
      ctx.throw(405, `${ctx.method} is not allowed on this path; allowed: GET, HEAD.`);
    }
    if (ctx.path === '/readyz') await storeCall(() => store.ping());
    ctx.type = 'application/json';
    ctx.body = OK;
  };
}
