import type { Webhook } from 'standardwebhooks';
import type { Delivery } from '../store/store.ts';

/** What one attempt came to. `abandoned`: cut short by shutdown, so it says nothing about the receiver. */
export type AttemptOutcome = { ok: true; status: number } | { ok: false; abandoned: boolean; error: string };

/**
 * One attempt: POSTs the delivery's payload, signed as Standard Webhooks describes (`webhook-id`,
 * `webhook-timestamp` of this attempt, `webhook-signature` = `v1,<base64 HMAC-SHA256 of
 * id.timestamp.body>`). A 2xx answer is delivered; anything else (another status, a redirect, which is
 * not followed, a refused connection, no answer within `timeoutMs`) is a failed attempt.
 */
export async function sendDelivery(
  delivery: Delivery,
  { webhook, timeoutMs, abort }: { webhook: Webhook; timeoutMs: number; abort: AbortSignal },
): Promise<AttemptOutcome> {
  const timestamp = new Date();
  const timeout = AbortSignal.timeout(timeoutMs);
  try {
    const response = await fetch(delivery.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'user-agent': 'plant-store-webhooks/1.0',
        'webhook-id': delivery.id,
        'webhook-timestamp': String(Math.floor(timestamp.getTime() / 1000)),
        'webhook-signature': webhook.sign(delivery.id, timestamp, delivery.payload),
      },
      body: delivery.payload,
      redirect: 'manual',
      signal: AbortSignal.any([timeout, abort]),
    });
    // The body is not needed; discarding it frees the connection.
    await response.body?.cancel();
    if (response.status >= 200 && response.status < 300) return { ok: true, status: response.status };
    return { ok: false, abandoned: false, error: `HTTP ${response.status}` };
  } catch (error) {
    if (abort.aborted) return { ok: false, abandoned: true, error: 'abandoned at shutdown' };
    if (timeout.aborted) return { ok: false, abandoned: false, error: `no answer within ${timeoutMs} ms` };
    // fetch's messages can quote the URL (e.g. one with credentials): never store or log its secrets.
    return { ok: false, abandoned: false, error: redactUrls(describeFetchError(error)) };
  }
}

/** fetch's "fetch failed" hides the reason in `cause`: ECONNREFUSED, ENOTFOUND, a reset, … */
function describeFetchError(error: unknown): string {
  const cause = error instanceof Error ? error.cause : undefined;
  const code = (cause as { code?: unknown } | undefined)?.code;
  if (typeof code === 'string') return `connection failed (${code})`;
  if (cause instanceof Error && cause.message) return `request failed (${cause.message})`;
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

/** A subscriber URL fit for logs and listings: credentials and query (which may carry tokens) dropped. */
export function redactUrl(url: string): string {
  if (!URL.canParse(url)) return '(not a URL)';
  const parsed = new URL(url);
  return `${parsed.origin}${parsed.pathname}`;
}
