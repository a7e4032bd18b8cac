/** The server's per-token rate limit, from its `RateLimit-Policy` header: `points` calls per `windowSeconds`. */
export type RateLimitPolicy = { points: number; windowSeconds: number };

/** Options of {@link backoffFetch}. */
export type BackoffOptions = {
  /** Attempts of one request before its 429 or 503 is handed to the caller (default 10). */
  attempts?: number;
  /** How long one attempt may take, in ms, waiting excluded. */
  timeoutMs: number;
  /** Told before each wait, with the number of seconds (from `Retry-After`). */
  onWait?: (seconds: number) => void;
  /** The `fetch` underneath (default: the global one). */
  fetch?: typeof globalThis.fetch;
};

/** A `fetch` that waits out 429 and busy 503 answers, and remembers the server's rate limit. */
export type BackoffFetch = typeof globalThis.fetch & {
  /** The last `RateLimit-Policy` the server sent; `undefined` before one arrived (or with no limit). */
  readonly policy: RateLimitPolicy | undefined;
};

/**
 * Wraps `fetch` for bulk work: an answer of 429 (rate limited) or 503 carrying `Retry-After` is
 * retried after that many seconds, the whole request again (the server refuses such a request
 * before any call of it runs). Each attempt gets its own timeout, so waiting never times out.
 */
export function backoffFetch({
  attempts = 10,
  timeoutMs,
  onWait,
  fetch = globalThis.fetch,
}: BackoffOptions): BackoffFetch {
  let policy: RateLimitPolicy | undefined;
  const wrapped = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    for (let attempt = 1; ; attempt++) {
      const timeout = AbortSignal.timeout(timeoutMs);
      const signal = init?.signal ? AbortSignal.any([init.signal, timeout]) : timeout;
      const response = await fetch(input, { ...init, signal });
      policy = parsePolicy(response.headers.get('ratelimit-policy')) ?? policy;
      const wait = retryAfterSeconds(response);
      if (wait === undefined || attempt >= attempts) return response;
      // Drain the refused answer so its connection can be reused.
      await response.arrayBuffer().catch(() => undefined);
      onWait?.(wait);
      await new Promise((resolve) => setTimeout(resolve, wait * 1000));
    }
  };
  return Object.defineProperty(wrapped, 'policy', { get: () => policy }) as BackoffFetch;
}

/** Seconds to wait before retrying this answer, or `undefined` when it is not one to retry. */
function retryAfterSeconds(response: Response): number | undefined {
  if (response.status !== 429 && response.status !== 503) return undefined;
  const header = response.headers.get('retry-after');
  if (header === null) return undefined;
  if (/^[0-9]+$/.test(header.trim())) return Number(header.trim());
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - Date.now()) / 1000));
}

/** `"default";q=6000;w=60` (draft-ietf-httpapi-ratelimit-headers) as a policy. */
function parsePolicy(header: string | null): RateLimitPolicy | undefined {
  const points = /;\s*q=([0-9]+)/.exec(header ?? '')?.[1];
  const window = /;\s*w=([0-9]+)/.exec(header ?? '')?.[1];
  if (points === undefined) return undefined;
  return { points: Number(points), windowSeconds: window === undefined ? 1 : Number(window) };
}
