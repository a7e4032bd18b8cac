import { getTRPCErrorFromUnknown, type TRPCError } from '@trpc/server';
import type { Context as KoaContext } from 'koa';
import { RequestError } from '../errors.ts';
import { type EventStream, OVERFLOW_MESSAGE } from '../events/event-stream.ts';
import { toPlantEvent } from '../operations/events.ts';
import type { AnyOperation, RequestContext } from '../operations/operation.ts';
import { runOperation } from '../operations/pipeline.ts';
import { chunk, framer, type StreamFormat, serveEventStream } from '../http/sse.ts';
import {
  asTrpcError,
  resumeInput,
  SUBSCRIPTION_PING_MS,
  toTrpcError,
  transformer,
  trpcErrorShape,
  unreadableInput,
} from './procedures.ts';

/**
 * A tRPC subscription over SSE (what `httpSubscriptionLink` opens), answered here rather than by
 * tRPC's node-http handler, in the same bytes: tRPC's writer takes each event through a generator,
 * web streams and a text encoder per stream, about 100 µs an event, so 1,000 subscriptions at 100
 * changes/s held the api's core. Here they share the SSE path's writer (http/sse.ts): each run's
 * frames made once for every stream. Kept by the 20% rule (docs/architecture.md, Going around a
 * library); test/in-process/trpc-direct-path.test.ts fails when tRPC's wire format changes.
 *
 * The format is tRPC's (`sseStreamProducer`): a `connected` event, then each event `tracked` with
 * its id (`data:` superjson, `id:`), a `ping` event when idle; a stream that cannot open, and one
 * too slow for its events or whose token was revoked, ends with a `serialized-error` event. A
 * shutdown, or another token's stream taking its place, cuts the connection rather than completing
 * the subscription, so that the client reconnects (to another instance, after a shutdown) and resumes.
 */
export function subscriptionFormat(path: string): StreamFormat {
  const endings = {
    overflow: chunk(errorMessage(toTrpcError(new RequestError('busy', OVERFLOW_MESSAGE)), path)),
    revoked: chunk(
      errorMessage(toTrpcError(new RequestError('invalid_token', 'The bearer token was revoked.')), path),
    ),
    shutdown: 'cut',
    displaced: 'cut',
  } as const;
  return {
    headers: {
      'Content-Type': 'text/event-stream',
      'Cache-Control': 'no-cache, no-transform',
      'X-Accel-Buffering': 'no',
      Connection: 'keep-alive',
    },
    opening: chunk(CONNECTED),
    heartbeat: chunk(message('event: ping\ndata: \n')),
    frames: framer((event) =>
      message(`data: ${JSON.stringify(transformer.serialize(toPlantEvent(event)))}\nid: ${event.id}\n`),
    ),
    ending: (reason) => endings[reason],
  };
}

/** tRPC ends each message's fields with an empty line and one more line break. */
const message = (fields: string) => `${fields}\n\n`;

const CONNECTED = message('event: connected\ndata: {}\n');

function errorMessage(error: TRPCError, path: string): string {
  const shape = transformer.serialize(trpcErrorShape(error, path));
  return message(`event: serialized-error\ndata: ${JSON.stringify(shape)}\n`);
}

/**
 * Opens the stream of `operation` for a subscription request and serves it in `format`; a refusal
 * (bad input, missing scope, a limit, a resume id out of reach) is answered as tRPC does, a 200
 * whose stream is `connected` and the error, and handed to `onError` to be logged.
 */
export async function serveSubscription(
  ctx: KoaContext,
  subscription: { path: string; operation: AnyOperation; format: StreamFormat },
  context: RequestContext,
  onError: (error: TRPCError) => void,
): Promise<void> {
  const { path, operation, format } = subscription;
  ctx.vary('trpc-accept');
  ctx.vary('accept');
  let stream: EventStream;
  try {
    // No key, so never a replay: the stream itself.
    const result = await runOperation(operation, context, () => subscriptionInput(ctx), undefined);
    stream = (result as { output: EventStream }).output;
  } catch (thrown) {
    const error = getTRPCErrorFromUnknown(asTrpcError(thrown));
    onError(error);
    ctx.status = 200;
    ctx.set(format.headers);
    ctx.body = CONNECTED + errorMessage(error, path);
    return;
  }
  serveEventStream(ctx, stream, format, SUBSCRIPTION_PING_MS);
}

/**
 * The request's input as tRPC's handler reads a subscription's: the `input` parameter's superjson,
 * with the id to resume after from a `Last-Event-ID` header or a `lastEventId` parameter (what
 * `httpSubscriptionLink` and EventSource send) as its `lastEventId`.
 */
function subscriptionInput(ctx: KoaContext): unknown {
  const params = new URLSearchParams(ctx.querystring);
  let input: unknown;
  const raw = params.get('input');
  if (raw !== null) {
    try {
      input = transformer.deserialize(JSON.parse(raw));
    } catch (cause) {
      throw unreadableInput('request parameters', cause);
    }
  }
  const header = ctx.req.headers['last-event-id'];
  const lastEventId = header ?? params.get('lastEventId') ?? params.get('Last-Event-Id');
  if (lastEventId) {
    if (typeof input === 'object' && input !== null && !Array.isArray(input))
      input = { ...input, lastEventId };
    else input ??= { lastEventId };
  }
  return resumeInput(input);
}

/** Whether a GET's parameters are only those a subscription's request carries. */
export function onlySubscriptionParams(querystring: string): boolean {
  for (const key of new URLSearchParams(querystring).keys())
    if (key !== 'input' && key !== 'lastEventId' && key !== 'Last-Event-Id') return false;
  return true;
}
