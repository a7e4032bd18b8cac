import type { ApiError } from '@plant-store/schema';

/** What a {@link PlantStoreError} is built from. */
export type PlantStoreErrorInit = {
  /** The HTTP method of the call (`POST`, or `GET` for a tRPC query). */
  method: string;
  /** The URL the call went to (for tRPC: the endpoint and procedure path, `…/trpc/plants.create`). */
  url: string;
  /** The HTTP status of the answer; `0` when no answer arrived. */
  status: number;
  /** The server's `Error` body, when the answer carried one. */
  body?: ApiError;
  /** What went wrong, when the server did not say (no answer, or an answer the client cannot use). */
  reason?: string;
  cause?: unknown;
};

/**
 * The one error both clients throw when a call fails: the server answered with an error, answered
 * something the client cannot use, or did not answer at all (`status` 0, the failure in `cause`).
 * Its `message` reads `[POST] http://host/plants: 409 A plant with id 1 already exists.`
 */
export class PlantStoreError extends Error {
  override readonly name = 'PlantStoreError';
  /** The HTTP status of the answer; `0` when none arrived (network failure, abort, timeout). */
  readonly status: number;
  /** The `error` code of the server's `Error` body (the HTTP status); `undefined` without one. */
  readonly error: number | undefined;
  /** The `message` of the server's `Error` body; `undefined` without one. */
  readonly serverMessage: string | undefined;
  readonly method: string;
  readonly url: string;

  constructor({ method, url, status, body, reason, cause }: PlantStoreErrorInit) {
    const detail = body?.message ?? reason ?? 'the call failed';
    const outcome = status === 0 ? `no response (${detail})` : `${status} ${detail}`;
    super(`[${method}] ${url}: ${outcome}`, { cause });
    this.status = status;
    this.error = body?.error;
    this.serverMessage = body?.message;
    this.method = method;
    this.url = url;
  }
}

/**
 * Whether `error` is a conditional change refused because the plant changed since the caller read
 * it (`ifMatch` / `expectedVersion` no longer its version): REST 412, tRPC `PRECONDITION_FAILED`.
 * Nothing was changed; read the plant again to decide.
 */
export function isPreconditionFailed(error: unknown): error is PlantStoreError {
  return error instanceof PlantStoreError && error.status === 412;
}

/** The messages down an error's `cause` chain: `fetch failed: connect ECONNREFUSED 127.0.0.1:1`. */
export function failureReason(error: unknown): string {
  const messages: string[] = [];
  for (let at = error, depth = 0; at !== undefined && depth < 4; depth++) {
    // An Event (EventSource's error) is no Error but has a message too.
    const text = (at as { message?: unknown } | null)?.message;
    const message = typeof text === 'string' ? text : String(at);
    if (message !== messages.at(-1)) messages.push(message);
    at = at instanceof Error ? at.cause : undefined;
  }
  return messages.join(': ');
}
