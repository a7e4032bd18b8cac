import { retryAfterMs } from './retry-after.ts';

/** The server's per-token rate limit, from its `RateLimit-Policy` header: `points` calls per `windowSeconds`. */
export type RateLimitPolicy = { points: number; windowSeconds: number };

/** What {@link Backoff} needs of an answer, whatever sent the request. */
export type Reply = {
  status: number;
  header(name: string): string | null | undefined;
  /** Lets go of an answer that is retried (e.g. drains its body). */
  discard?(): Promise<unknown>;
};

/** Options of {@link createBackoff}. */
export type BackoffOptions = {
  /** Attempts of one request before its 429 or 503 is handed to the caller (default 10). */
  attempts?: number;
  /**
   * The longest `Retry-After` waited for, in seconds (default 60). An answer asking for longer is
   * handed to the caller at once: a server must not park the client for days.
   */
  maxWaitSeconds?: number;
  /** Told before each wait, with the number of seconds (from `Retry-After`). */
  onWait?: (seconds: number) => void;
  /** Told when an answer's `Retry-After` asks for more than `maxWaitSeconds`, with the seconds asked. */
  onWaitRefused?: (seconds: number) => void;
};

/** The default of `maxWaitSeconds`: a rate-limit window of a minute is waited out, not more. */
export const MAX_WAIT_SECONDS = 60;

/** Retries of requests refused for now, shared by every request of a bulk command. */
export type Backoff = {
  /**
   * Makes `attempt` until its answer is not a 429 (rate limited) or a 503 carrying `Retry-After`,
   * waiting as `Retry-After` says in between: the whole request again, as the server refuses such
   * a request before any call of it runs.
   */
  send<R extends Reply>(attempt: () => Promise<R>): Promise<R>;
  /** The last `RateLimit-Policy` the server sent; `undefined` before one arrived (or with no limit). */
  readonly policy: RateLimitPolicy | undefined;
};

export function createBackoff({
  attempts = 10,
  maxWaitSeconds = MAX_WAIT_SECONDS,
  onWait,
  onWaitRefused,
}: BackoffOptions = {}): Backoff {
  let policy: RateLimitPolicy | undefined;
  return {
    async send(attempt) {
      for (let count = 1; ; count++) {
        const reply = await attempt();
        policy = parsePolicy(reply.header('ratelimit-policy')) ?? policy;
        const wait = retryAfterSeconds(reply);
        if (wait === undefined || count >= attempts) return reply;
        if (wait > maxWaitSeconds) {
          onWaitRefused?.(wait);
          return reply;
        }
        await reply.discard?.().catch(() => undefined);
        onWait?.(wait);
        await new Promise((resolve) => setTimeout(resolve, wait * 1000));
      }
    },
    get policy() {
      return policy;
    },
  };
}

/**
 * A `fetch` whose requests go through `backoff`, each attempt with its own timeout (waiting for
 * `Retry-After` never times out).
 */
export function backoffFetch(
  backoff: Backoff,
  { timeoutMs, fetch = globalThis.fetch }: { timeoutMs: number; fetch?: typeof globalThis.fetch },
): typeof globalThis.fetch {
  return async (input, init) => {
    const reply = await backoff.send(async () => {
      const timeout = AbortSignal.timeout(timeoutMs);
      const signal = init?.signal ? AbortSignal.any([init.signal, timeout]) : timeout;
      const response = await fetch(input, { ...init, signal });
      return {
        response,
        status: response.status,
        header: (name: string) => response.headers.get(name),
        discard: () => response.arrayBuffer(),
      };
    });
    return reply.response;
  };
}

/** Seconds to wait before retrying this answer, or `undefined` when it is not one to retry. */
function retryAfterSeconds(reply: Reply): number | undefined {
  if (reply.status !== 429 && reply.status !== 503) return undefined;
  const ms = retryAfterMs(reply.header('retry-after'));
  return ms === undefined ? undefined : Math.ceil(ms / 1000);
}

/** `"default";q=6000;w=60` (draft-ietf-httpapi-ratelimit-headers) as a policy. */
function parsePolicy(header: string | null | undefined): RateLimitPolicy | undefined {
  const points = /;\s*q=([0-9]+)/.exec(header ?? '')?.[1];
  const window = /;\s*w=([0-9]+)/.exec(header ?? '')?.[1];
  if (points === undefined) return undefined;
  return { points: Number(points), windowSeconds: window === undefined ? 1 : Number(window) };
}
