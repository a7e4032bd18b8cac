import type { Context } from 'koa';
import type { RequestScope } from '../operations/operation.ts';

/** The request as operations see it: how many calls it carries, when its answer is sent, and how to cut it. */
export function requestScope(ctx: Context, calls: number): RequestScope {
  const scope: RequestScope = {
    calls,
    markReplayed: () => ctx.set('Idempotent-Replayed', 'true'),
    // A client may have hung up before the call began: 'close' would then never come again.
    onAnswered: (done) => (ctx.res.closed ? done() : ctx.res.once('close', done)),
    abort: () => ctx.res.destroy(),
  };
  // The request's span when it is traced (http/trace-middleware.ts): its store calls are children of it.
  if (ctx.state.span) scope.span = ctx.state.span;
  // Absent is not empty: an empty key is malformed (400). Several headers arrive joined by ", ".
  const idempotencyKey = ctx.req.headers['idempotency-key'];
  if (typeof idempotencyKey === 'string') scope.idempotencyKey = idempotencyKey;
  return scope;
}
