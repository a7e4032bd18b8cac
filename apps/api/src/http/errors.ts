import { stringifyJson } from '@plant-store/schema';
import type { Middleware } from 'koa';
import type { Logger } from 'pino';
import { type HttpError, isBusy, toHttpError } from '../errors.ts';

/**
 * The one error path outside /trpc: whatever is thrown, and any route nobody served, becomes an
 * `Error` body `{error, message}`. 5xx causes are logged here and never shown to the client.
 */
export function errorMiddleware(log: Logger): Middleware {
  return async (ctx, next) => {
    let answer: HttpError | undefined;
    try {
      await next();
      if (ctx.respond !== false && ctx.status === 404 && ctx.body == null) {
        answer = { status: 404, message: 'There is no operation at this method and path.' };
      }
    } catch (error) {
      answer = fromKoaError(error) ?? toHttpError(error);
      // An outage answers many requests 503: one line each, without a stack. Other 5xx are bugs.
      // A busy 503 is a bound doing its job: the request's own log line says enough.
      if (answer.status === 503) {
        if (!isBusy(error))
          log.warn({ reqId: ctx.state.requestId, reason: causes(error) }, 'store unavailable');
      } else if (answer.status >= 500)
        log.error({ err: error, reqId: ctx.state.requestId }, 'request failed');
    }
    if (answer === undefined) return;
    ctx.status = answer.status;
    if (answer.headers) ctx.set(answer.headers);
    ctx.type = 'application/json';
    ctx.body = stringifyJson({ error: answer.status, message: answer.message });
  };
}

/** The messages down an error's `cause` chain: "The store is unavailable.: PostgreSQL is unavailable: …". */
function causes(error: unknown): string {
  const messages: string[] = [];
  for (let e: unknown = error; e instanceof Error && messages.length < 5; e = e.cause)
    messages.push(e.message || e.name);
  return messages.join(': ');
}

/** Errors raised with `ctx.throw(status, message)` (http-errors) whose message is meant for clients. */
function fromKoaError(error: unknown): HttpError | undefined {
  const { status, expose, message } = error as { status?: unknown; expose?: unknown; message?: unknown };
  if (typeof status === 'number' && expose === true && typeof message === 'string')
    return { status, message };
  return undefined;
}
