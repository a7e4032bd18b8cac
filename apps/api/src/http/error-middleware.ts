import { stringifyJson } from '@plant-store/schema';
import type { Middleware } from 'koa';
import type { Logger } from 'pino';
import { describeCauses } from '../causes.ts';
import { type HttpError, RequestError, toHttpError } from '../errors.ts';
import { answerTrpc, TRPC_PREFIX, trpcFailure } from '../trpc/answer.ts';

/**
 * The one error path of every request: whatever is thrown, and any route nobody served, becomes an
 * `Error` body `{error, message}`, or under /trpc tRPC's error (one for the whole request, as
 * @trpc/client expects a refusal: a limit, a batch too large), with the same status and headers.
 * 5xx causes are logged here and never shown to the client.
 */
export function errorMiddleware(log: Logger): Middleware {
  return async (ctx, next) => {
    let answer: HttpError | undefined;
    try {
      await next();
      if (ctx.respond !== false && ctx.status === 404 && ctx.body == null) {
        answer = toHttpError(new RequestError('not_found', 'There is no operation at this method and path.'));
      }
    } catch (error) {
      logFailure(ctx.state.log ?? log, error, ctx.state.requestId);
      if (ctx.path.startsWith(TRPC_PREFIX)) return answerTrpc(ctx, false, [trpcFailure(error, undefined)]);
      answer = toHttpError(error);
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
 * else that is not a `RequestError` below 500 is a bug.
 */
export function logFailure(log: Logger, error: unknown, reqId: unknown, path?: string): void {
  if (!(error instanceof RequestError)) log.error({ err: error, reqId, path }, 'request failed');
  else if (error.reason === 'unavailable')
    log.warn({ reqId, path, reason: describeCauses(error.cause) }, 'store unavailable');
}
