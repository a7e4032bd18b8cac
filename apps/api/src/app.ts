import Koa from 'koa';
import type { Logger } from 'pino';
import { createTokenVerifier } from './auth.ts';
import { errorMiddleware } from './http/errors.ts';
import { observeMiddleware } from './http/observe.ts';
import { openApiDocument } from './http/openapi.ts';
import { restAdapter, restRoutes } from './http/rest.ts';
import { trpcAdapter } from './http/trpc.ts';
import { appRouter } from './router.ts';
import type { PlantStore } from './store/store.ts';
import type { Context } from './trpc.ts';

export type AppOptions = {
  store: PlantStore;
  tokens: readonly { name: string; secret: string }[];
  log: Logger;
  /** The URL clients reach this server at, for the OpenAPI document's `servers`. */
  publicUrl: string;
};

/** Builds the Koa application; it does not listen. `app.callback()` is a plain node:http handler. */
export function createApp({ store, tokens, log, publicUrl }: AppOptions): Koa {
  const verifyToken = createTokenVerifier(tokens);
  const createContext = (authorization: string | undefined): Context => ({
    store,
    verifyToken,
    authorization,
  });
  const routes = restRoutes(appRouter);
  const documentJson = JSON.stringify(openApiDocument(routes, publicUrl));

  const app = new Koa();
  app.silent = true;
  app.use(observeMiddleware(log));
  app.use(trpcAdapter(appRouter, createContext));
  app.use(errorMiddleware(log));
  app.use(async (ctx, next) => {
    if (ctx.path !== '/openapi.json' || ctx.method !== 'GET') return next();
    ctx.type = 'application/json';
    ctx.body = documentJson;
  });
  app.use(restAdapter(routes, { store, verifyToken }));
  return app;
}
