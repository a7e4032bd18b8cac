import { stringifyJson } from '@plant-store/schema';
import type { Middleware } from 'koa';
import type { Logger } from 'pino';
import { describeCauses } from '../causes.ts';
import { ApiError, type HttpError, toHttpError } from '../errors.ts';

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
        answer = toHttpError(new ApiError('not_found', 'There is no operation at this method and path.'));
      }
    } catch (error) {
      answer = toHttpError(error);
      logFailure(ctx.state.log ?? log, error, ctx.state.requestId);
    }
    if (answer === undefined) return;
    ctx.status = answer.status;
    ctx.set(answer.headers);
    ctx.type = 'application/json';
    ctx.body = stringifyJson({ error: answer.status, message: answer.message });
  };
}

/**
 * Logs what a client is not told. An outage answers many requests 503: one line each, without a
 * stack. A busy 503 is a bound doing its job: the request's own log line says enough. Anything
 * else that is not an `ApiError` below 500 is a bug.
 */
export function logFailure(log: Logger, error: unknown, reqId: unknown, path?: string): void {
  if (!(error instanceof ApiError)) log.error({ err: error, reqId, path }, 'request failed');
  else if (error.reason === 'unavailable')
    log.warn({ reqId, path, reason: describeCauses(error.cause) }, 'store unavailable');
}
