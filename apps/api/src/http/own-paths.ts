import type { Middleware } from 'koa';

/** A part of the app that serves the requests of its own paths (the document, /docs, /metrics, …). */
export type OwnPaths = { owns: (path: string) => boolean; serve: Middleware };

export function ownPaths(owns: (path: string) => boolean, serve: Middleware): OwnPaths {
  return { owns, serve };
}

/**
 * One middleware for parts that each serve their own paths: the first that owns the request's path
 * serves it, and every other request goes straight to the next middleware. One rather than one
 * each: each middleware a request merely passes costs it a promise and a few turns of the
 * microtask queue, and here the path is read once for all of them.
 */
export function servePaths(...parts: OwnPaths[]): Middleware {
  return (ctx, next) => {
    const path = ctx.path;
    for (const part of parts) if (part.owns(path)) return part.serve(ctx, next);
    return next();
  };
}
