import { createHash } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import type { Dispatcher } from 'undici';
import type { Delivery } from '../store/contract.ts';
import { RefusedAddressError } from './ssrf.ts';

/** What one attempt came to. `abandoned`: cut short by shutdown, so it says nothing about the receiver. */
export type AttemptOutcome =
  | { ok: true; status: number }
  /** `status`: the HTTP status the receiver answered, when it answered. */
  | { ok: false; abandoned: boolean; error: string; status?: number };

/** Signs one attempt: the `webhook-signature` header's value. */
export type Signer = (id: string, timestamp: Date, payload: string) => string;

/** Standard Webhooks' signature (`v1,<base64 HMAC-SHA256 of id.timestamp.body>`), by `standardwebhooks`. */
export function webhookSigner(secret: string): Signer {
  const webhook = new Webhook(secret);
  return (id, timestamp, payload) => webhook.sign(id, timestamp, payload);
}

/**
 * How much of an answer's body is read (and discarded) before its connection is cut: the status
 * decides, and a receiver that streams without end must not hold a connection until the timeout.
 */
export const MAX_ANSWER_BYTES = 64 * 1024;

/**
 * One attempt: POSTs the delivery's payload over `connections` (connections.ts), signed as
 * Standard Webhooks describes (`webhook-id`, `webhook-timestamp` of this attempt,
 * `webhook-signature` from `sign`). A 2xx answer is delivered; anything else (another status, a
 * redirect, which is not followed, a refused connection, no answer within `timeoutMs`) is a failed
 * attempt. The answer's body is read and discarded (within `timeoutMs` too, and up to
 * `MAX_ANSWER_BYTES`) so that the connection can serve the next one.
 */
export function sendDelivery(
  delivery: Delivery,
  {
    connections,
    sign,
    timeoutMs,
    abort,
    headers = {},
  }: {
    connections: Dispatcher;
    sign: Signer;
    timeoutMs: number;
    /** Cuts the attempt short (shutdown): an `AttemptCut`, lighter than an AbortSignal, or a signal. */
    abort: AttemptCut | AbortSignal;
    /** Headers besides the Standard Webhooks ones (`webhook-event` for registered endpoints). */
    headers?: Record<string, string>;
  },
): Promise<AttemptOutcome> {
  const timestamp = new Date();
  const target = targetOf(delivery.url);
  // The refusal fetch gave: credentials in a URL are never sent (nor stored, nor logged: see redactUrls).
  if (target.refused !== undefined) return Promise.resolve(failed(target.refused));
  return new Promise((resolve) => {
    let outcome: AttemptOutcome | undefined;
    const settle = (result: AttemptOutcome) => {
      if (outcome) return;
      outcome = result;
      resolve(result);
    };
    // The exchange runs until its answer is read to the end or it fails; cut short, its connection
    // is closed (at once, or as soon as the request has one).
    let controller: { abort(reason: Error): void } | undefined;
    let cutShort: Error | undefined;
    let ended = false;
    const cut = (result: AttemptOutcome) => {
      settle(result);
      if (ended || cutShort) return;
      cutShort = new Error(result.ok ? 'cut' : result.error);
      controller?.abort(cutShort);
    };
    // Until the answer is read to its end: a receiver that dawdles loses its connection.
    const timer = setTimeout(() => cut(failed(`no answer within ${timeoutMs} ms`)), timeoutMs);
    const onAbort = () => cut({ ok: false, abandoned: true, error: 'abandoned at shutdown' });
    let unlisten: () => void;
    if (abort instanceof AttemptCut) {
      abort.onAbort = onAbort;
      unlisten = () => {
        abort.onAbort = undefined;
      };
    } else {
      abort.addEventListener('abort', onAbort, { once: true });
      unlisten = () => abort.removeEventListener('abort', onAbort);
    }
    const end = () => {
      ended = true;
      clearTimeout(timer);
      unlisten();
    };
    if (abort.aborted) onAbort();
    const requestHeaders: Record<string, string> = {
      'content-type': 'application/json',
      'user-agent': 'plant-store-webhooks/1.0',
      'webhook-id': delivery.id,
      'webhook-timestamp': String(Math.floor(timestamp.getTime() / 1000)),
      'webhook-signature': sign(delivery.id, timestamp, delivery.payload),
    };
    for (const name in headers) requestHeaders[name] = headers[name]!;
    let read = 0;
    try {
      connections.dispatch(
        {
          origin: target.origin,
          path: target.path,
          method: 'POST',
          headers: requestHeaders,
          body: delivery.payload,
        },
        {
          onRequestStart(started) {
            controller = started;
            if (cutShort) started.abort(cutShort);
          },
          onResponseStart(_, status) {
            if (status >= 200 && status < 300) settle({ ok: true, status });
            else if (status >= 300) settle({ ...failed(`HTTP ${status}`), status });
          },
          onResponseData(reading, chunk) {
            read += chunk.length;
            if (read > MAX_ANSWER_BYTES) reading.abort(new Error('answer too long'));
          },
          onResponseEnd: end,
          onResponseError(_, error) {
            end();
            settle(failed(describeError(error)));
          },
        },
      );
    } catch (error) {
      end();
      settle(failed(describeError(error)));
    }
  });
}

/**
 * What one attempt cutting it short needs of an AbortController, without its EventTarget: the worker
 * makes one per attempt, and at most one attempt listens to it.
 */
export class AttemptCut {
  aborted = false;
  /** Set by the attempt while it runs. */
  onAbort: (() => void) | undefined = undefined;

  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    const onAbort = this.onAbort;
    this.onAbort = undefined;
    onAbort?.();
  }
}

/** A subscriber URL as a request needs it: parsed once, not each attempt. */
type Target =
  | { refused: string; origin?: undefined; path?: undefined }
  | { refused?: undefined; origin: string; path: string };

/** Parsed subscriber URLs by text; bounded, as registered endpoints come and go. */
const targets = new Map<string, Target>();
const MAX_TARGETS = 1_024;

/** `url` parsed (or refused for its credentials); throws, as `new URL` does, when it is no URL. */
function targetOf(url: string): Target {
  let target = targets.get(url);
  if (target === undefined) {
    const parsed = new URL(url);
    target =
      parsed.username || parsed.password
        ? {
            refused: `request failed (Request cannot be constructed from a URL that includes credentials: ${parsed})`,
          }
        : { origin: parsed.origin, path: `${parsed.pathname}${parsed.search}` };
    if (targets.size >= MAX_TARGETS) targets.clear();
    targets.set(url, target);
  }
  return target;
}

function failed(error: string): AttemptOutcome {
  // Messages can quote the URL (e.g. one with credentials): never store or log its secrets.
  return { ok: false, abandoned: false, error: redactUrls(error) };
}

/**
 * undici's codes for what the system names otherwise: a connection the receiver closed before it
 * answered, and one not opened within the timeout.
 */
const SYSTEM_CODES: Record<string, string> = {
  UND_ERR_SOCKET: 'ECONNRESET',
  UND_ERR_CONNECT_TIMEOUT: 'ETIMEDOUT',
};

/** A failed connection names its reason by code: ECONNREFUSED, ENOTFOUND, ECONNRESET, … */
function describeError(error: unknown): string {
  if (error instanceof RefusedAddressError) return error.message;
  const given = (error as { code?: unknown } | undefined)?.code;
  const code = typeof given === 'string' ? (SYSTEM_CODES[given] ?? given) : undefined;
  if (code !== undefined && /^E[A-Z]+$/.test(code)) return `connection failed (${code})`;
  return error instanceof Error ? `request failed (${error.message})` : 'request failed';
}

/** Text fit for logs and `last_error`: each URL in it reduced as `redactUrl` does. */
export function redactUrls(text: string): string {
  return text.replace(/\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>]+/gi, (match) => {
    // Punctuation closing the sentence around the URL stays in the sentence.
    const tail = /[).,;:\]]*$/.exec(match)![0];
    return redactUrl(match.slice(0, match.length - tail.length)) + tail;
  });
}

/**
 * A subscriber URL fit for logs, `last_error` and listings: its origin only. Credentials, path and
 * query are dropped: services such as Slack keep the secret that authorizes posting in the path.
 */
export function redactUrl(url: string): string {
  if (!URL.canParse(url)) return '(not a URL)';
  return new URL(url).origin;
}

/**
 * Tells two operator URLs of one origin apart in logs without showing them: the first 12 hex digits
 * of the SHA-256 of the URL as configured (`printf %s "$URL" | sha256sum | cut -c1-12`).
 */
export function urlDigest(url: string): string {
  return createHash('sha256').update(url).digest('hex').slice(0, 12);
}
