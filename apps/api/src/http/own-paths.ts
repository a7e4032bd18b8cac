import type { Middleware } from 'koa';

/**
 * A middleware that serves the requests `owns` (by path) and hands every other one straight to the
 * next, with no async function in between: each one a request merely passes cost it a promise and
 * a few turns of the microtask queue, and a read by id passes seven.
 */
export function ownPaths(owns: (path: string) => boolean, serve: Middleware): Middleware {
  return (ctx, next) => (owns(ctx.path) ? serve(ctx, next) : next());
}
