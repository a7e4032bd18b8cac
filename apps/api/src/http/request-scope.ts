import type { Context } from 'koa';
import type { RequestScope } from '../operation.ts';

/** The request as operations see it: how many calls it carries, when its answer is sent, and how to cut it. */
export function requestScope(ctx: Context, calls: number): RequestScope {
  // Absent is not empty: an empty key is malformed (400). Several headers arrive joined by ", ".
  const idempotencyKey = ctx.req.headers['idempotency-key'];
  return {
    calls,
    // The request's span when it is traced (http/trace.ts): its store calls are children of it.
    ...(ctx.state.span && { span: ctx.state.span }),
    ...(typeof idempotencyKey === 'string' && { idempotencyKey }),
    markReplayed: () => ctx.set('Idempotent-Replayed', 'true'),
    // A client may have hung up before the call began: 'close' would then never come again.
    onAnswered: (done) => (ctx.res.closed ? done() : ctx.res.once('close', done)),
    abort: () => ctx.res.destroy(),
  };
}
