import { createHash, createHmac } from 'node:crypto';
import {
  Agent as HttpAgent,
  type ClientRequest,
  type RequestOptions,
  request as httpRequest,
} from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { Socket } from 'node:net';
import { urlToHttpOptions } from 'node:url';
import type { Delivery } from '../store/store.ts';
import {
  guardedLookup,
  hostOf,
  isAllowedAddress,
  RefusedAddressError,
  type Resolve,
  type UrlPolicy,
} from './ssrf.ts';

/** What one attempt came to. `abandoned`: cut short by shutdown, so it says nothing about the receiver. */
export type AttemptOutcome =
  | { ok: true; status: number }
  /** `status`: the HTTP status the receiver answered, when it answered. */
  | { ok: false; abandoned: boolean; error: string; status?: number };

/** Signs one attempt: the `webhook-signature` header's value. */
export type Signer = (id: string, timestamp: Date, payload: string) => string;

/**
 * Standard Webhooks' signature, `v1,<base64 HMAC-SHA256 of id.timestamp.body>` keyed with the
 * secret's bytes (after `whsec_`), as `standardwebhooks` computes it, but with node:crypto: that
 * library's pure-JavaScript HMAC cost more CPU than the rest of an attempt.
 */
export function webhookSigner(secret: string): Signer {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  return (id, timestamp, payload) => {
    const seconds = Math.floor(timestamp.getTime() / 1000);
    return `v1,${createHmac('sha256', key).update(`${id}.${seconds}.${payload}`).digest('base64')}`;
  };
}

/**
 * Connections kept open between attempts (node:http rather than fetch: a delivery costs a fraction
 * of the CPU, which the api shares with the creates that enqueue them). The worker's `concurrency`
 * bounds the connections per subscriber.
 */
const agents = { 'http:': new HttpAgent({ keepAlive: true }), 'https:': new HttpsAgent({ keepAlive: true }) };
/** Third parties' endpoints get connections of their own: never one opened for an operator's URL. */
const guardedAgents = {
  'http:': new HttpAgent({ keepAlive: true }),
  'https:': new HttpsAgent({ keepAlive: true }),
};

/**
 * How much of an answer's body is read (and discarded) before its connection is cut: the status
 * decides, and a receiver that streams without end must not hold a connection until the timeout.
 */
export const MAX_ANSWER_BYTES = 64 * 1024;

/**
 * One attempt: POSTs the delivery's payload, signed as Standard Webhooks describes (`webhook-id`,
 * `webhook-timestamp` of this attempt, `webhook-signature` from `sign`). A 2xx answer is delivered;
 * anything else (another status, a redirect, which is not followed, a refused connection, no answer
 * within `timeoutMs`) is a failed attempt. The answer's body is read and discarded (within
 * `timeoutMs` too, and up to `MAX_ANSWER_BYTES`) so that the connection can serve the next one.
 *
 * `guard`: the URL is a third party's (a registered endpoint), so the connection may go only to a
 * public address unless `guard.allowPrivate` (see ssrf.ts). Omitted: an operator's `WEBHOOK_URLS`,
 * trusted as configured. `resolveHost` stands in for DNS in tests.
 */
export function sendDelivery(
  delivery: Delivery,
  {
    sign,
    timeoutMs,
    abort,
    guard,
    resolveHost,
    headers = {},
  }: {
    sign: Signer;
    timeoutMs: number;
    /** Cuts the attempt short (shutdown): an `AttemptCut`, lighter than an AbortSignal, or a signal. */
    abort: AttemptCut | AbortSignal;
    guard?: UrlPolicy;
    resolveHost?: Resolve;
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
    let request: ClientRequest;
    try {
      const pool = guard ? guardedAgents : agents;
      const requestHeaders: Record<string, string | number> = {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(delivery.payload),
        'user-agent': 'plant-store-webhooks/1.0',
        'webhook-id': delivery.id,
        'webhook-timestamp': String(Math.floor(timestamp.getTime() / 1000)),
        'webhook-signature': sign(delivery.id, timestamp, delivery.payload),
      };
      for (const name in headers) requestHeaders[name] = headers[name]!;
      const { protocol, hostname, port, path } = target.options;
      const agent = target.https ? pool['https:'] : pool['http:'];
      const options: RequestOptions = {
        protocol,
        hostname,
        port,
        path,
        method: 'POST',
        agent,
        headers: requestHeaders,
      };
      // A host name is resolved by the guarded lookup, which refuses non-public addresses.
      if (guard) options.lookup = guardedLookup(guard, resolveHost);
      request = (target.https ? httpsRequest : httpRequest)(options);
    } catch (error) {
      settle(failed(describeError(error)));
      return;
    }
    // Until the answer is read to its end: a receiver that dawdles loses its connection.
    const timer = setTimeout(() => {
      settle(failed(`no answer within ${timeoutMs} ms`));
      request.destroy();
    }, timeoutMs);
    const onAbort = () => {
      settle({ ok: false, abandoned: true, error: 'abandoned at shutdown' });
      request.destroy();
    };
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
    if (abort.aborted) onAbort();
    request.on('close', () => {
      clearTimeout(timer);
      unlisten();
    });
    request.on('error', (error) => settle(failed(describeError(error))));
    request.on('response', (response) => {
      const status = response.statusCode ?? 0;
      response.on('error', () => {});
      let read = 0;
      response.on('data', (chunk: Buffer) => {
        read += chunk.length;
        if (read > MAX_ANSWER_BYTES) request.destroy();
      });
      settle(status >= 200 && status < 300 ? { ok: true, status } : { ...failed(`HTTP ${status}`), status });
    });
    if (!guard) {
      request.end(delivery.payload);
      return;
    }
    // Nothing (headers included) is written until the address actually connected to passes the
    // guard: this catches what never went through the lookup (an IP literal) or got past it.
    request.once('socket', (socket) =>
      whenConnected(socket, () => {
        if (isAllowedAddress(guard, socket.remoteAddress ?? '')) {
          request.end(delivery.payload);
          return;
        }
        settle(failed(new RefusedAddressError(target.host).message));
        request.destroy();
      }),
    );
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

/**
 * A subscriber URL as a request's options: parsed once, as `http.request(url)` would each time. Only
 * the members a request uses, in an ordinary object: `urlToHttpOptions` gives one without prototype,
 * in dictionary mode, which Node 20 copied in 1.8 us a spread (a literal of its members: 0.03 us).
 */
type Target =
  | { refused: string; options?: undefined; https?: undefined; host?: undefined }
  | {
      refused?: undefined;
      options: Pick<RequestOptions, 'protocol' | 'hostname' | 'port' | 'path'>;
      https: boolean;
      host: string;
    };

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
        : { options: requestTarget(parsed), https: parsed.protocol === 'https:', host: hostOf(parsed) };
    if (targets.size >= MAX_TARGETS) targets.clear();
    targets.set(url, target);
  }
  return target;
}

function requestTarget(url: URL) {
  const { protocol, hostname, port, path } = urlToHttpOptions(url);
  return { protocol, hostname, port, path };
}

/** Runs `then` once `socket` is connected: at once for a kept-alive one. */
function whenConnected(socket: Socket, then: () => void): void {
  if (socket.connecting) socket.once('connect', then);
  else then();
}

function failed(error: string): AttemptOutcome {
  // Messages can quote the URL (e.g. one with credentials): never store or log its secrets.
  return { ok: false, abandoned: false, error: redactUrls(error) };
}

/** A failed connection names its reason by code: ECONNREFUSED, ENOTFOUND, ECONNRESET, … */
function describeError(error: unknown): string {
  if (error instanceof RefusedAddressError) return error.message;
  const code = (error as { code?: unknown } | undefined)?.code;
  if (typeof code === 'string' && /^E[A-Z]+$/.test(code)) return `connection failed (${code})`;
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
