import { PlantStoreError } from './errors.ts';

/**
 * How the clients retry a create, an update or a delete. Each such call carries an `Idempotency-Key` (the same
 * on every attempt), so a retry of an attempt that did commit gets the first answer again (marked
 * `Idempotent-Replayed: true`), never a 409 or 404 of its own making. Retried: no answer at all
 * (refused, reset, cut after sending), 503, and 409 with `Retry-After` (the first attempt is still in
 * flight). Never other answers, nor a call its `signal` aborted.
 *
 * Webhook endpoint calls that are safe to repeat without a key are retried the same way: reads,
 * redeliveries, and deletes (a retry answered 404 after an attempt that may have deleted resolves).
 * Creates, secret rotations and pings of endpoints are never retried.
 */
export type RetryOptions = {
  /** Attempts in all, the first included (default 3; 1 turns retries off). */
  attempts?: number;
  /** Wait before the first retry, doubled before each further one, with jitter (default 200 ms). */
  delayMs?: number;
};

const DEFAULTS = { attempts: 3, delayMs: 200 };

/** Errors that are worth another attempt although their status alone does not say so. */
const retriable = new WeakSet<PlantStoreError>();

export function markRetriable(error: PlantStoreError): void {
  retriable.add(error);
}

export function isRetriable(error: unknown): boolean {
  return (
    error instanceof PlantStoreError && (error.status === 0 || error.status === 503 || retriable.has(error))
  );
}

/**
 * The key a create or delete is sent with: the caller's, else a fresh random UUID while retries
 * are on; none when they are off (`attempts: 1`) and the caller gave none.
 */
export function keyFor(given: string | undefined, options: RetryOptions = {}): string | undefined {
  if (given !== undefined) return given;
  return (options.attempts ?? DEFAULTS.attempts) > 1 ? crypto.randomUUID() : undefined;
}

/** The header value: the key as a Structured Fields string, as the IETF draft specifies. */
export function idempotencyKeyHeader(key: string): string {
  return `"${key.replace(/[\\"]/g, '\\$&')}"`;
}

/** Runs `attempt` until it succeeds, fails with an error that is not retriable, or the attempts are spent. */
export async function withRetries<T>(
  attempt: () => Promise<T>,
  options: RetryOptions = {},
  signal?: AbortSignal,
): Promise<T> {
  const { attempts, delayMs } = { ...DEFAULTS, ...options };
  for (let n = 1; ; n++) {
    try {
      return await attempt();
    } catch (error) {
      if (n >= attempts || signal?.aborted || !isRetriable(error)) throw error;
      // Jitter over [delay/2, delay]: clients cut off together do not retry together.
      const delay = delayMs * 2 ** (n - 1);
      await new Promise((resolve) => setTimeout(resolve, delay / 2 + Math.random() * (delay / 2)));
    }
  }
}

/**
 * `attempt` for a delete retried without a key: when an earlier attempt may have reached the server
 * (no answer, but not refused), a 404 from a retry means that attempt deleted it, and the delete
 * resolves to `done`; a 404 on the first attempt still fails.
 */
export function deleteAttempts<T>(attempt: () => Promise<T>, done: T): () => Promise<T> {
  let mayHaveDeleted = false;
  return async () => {
    try {
      return await attempt();
    } catch (error) {
      if (!(error instanceof PlantStoreError)) throw error;
      if (mayHaveDeleted && error.status === 404) return done;
      if (error.status === 0 && !refused(error)) mayHaveDeleted = true;
      throw error;
    }
  };
}

/** No answer because the connection was refused: the request never left. */
function refused(error: PlantStoreError): boolean {
  for (let at: unknown = error.cause, depth = 0; at instanceof Error && depth < 4; depth++) {
    if ((at as { code?: unknown }).code === 'ECONNREFUSED') return true;
    at = at.cause;
  }
  return false;
}
