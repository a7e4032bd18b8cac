/**
 * Why a request failed, and the HTTP status each reason answers with. The reason, not the message,
 * decides everything else an answer carries (the 401 challenge, `Retry-After` on a busy 503).
 */
const STATUS = {
  bad_request: 400,
  missing_token: 401,
  invalid_token: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  /** What was asked for is no longer kept (an event stream resumed from before the retention). */
  gone: 410,
  /** An Idempotency-Key reused for a different request. */
  unprocessable: 422,
  /** A conditional request whose condition failed (`If-Match`, tRPC's `expectedVersion`): nothing changed. */
  precondition_failed: 412,
  too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  /** The store cannot answer (an outage, a failed sync): retry later. */
  unavailable: 503,
  /** This process is at one of its bounds right now, not failing: retry in a second. */
  busy: 503,
} as const;

export type ErrorReason = keyof typeof STATUS;

/**
 * The one error type of the api: operations, body parsing, auth, probes, metrics and limits throw
 * it. (The body it becomes is the schema's `ApiError`, the document's `Error`: this is the thrown
 * side, hence another name.) Its message is written for the client and always shown; `cause` (an outage's details) is for
 * the log only. http/error-middleware.ts turns it into the REST `Error` body, trpc.ts into tRPC's error.
 */
export class RequestError extends Error {
  override name = 'RequestError';
  readonly status: number;
  /** Headers the answer needs besides those the reason implies (`Allow`, a rate limit's `Retry-After`). */
  readonly headers: Record<string, string>;

  constructor(
    readonly reason: ErrorReason,
    message: string,
    options: { cause?: unknown; headers?: Record<string, string> } = {},
  ) {
    super(message, { cause: options.cause });
    this.status = STATUS[reason];
    this.headers = options.headers ?? {};
  }
}

/** What an error becomes on the wire: an HTTP status, one sentence, and any headers it needs. */
export type HttpError = { status: number; message: string; headers: Record<string, string> };

const CHALLENGE: Partial<Record<ErrorReason, Record<string, string>>> = {
  // RFC 6750 §3: no error code when the request had no token, `invalid_token` when it was wrong.
  missing_token: { 'WWW-Authenticate': 'Bearer' },
  invalid_token: { 'WWW-Authenticate': 'Bearer error="invalid_token"' },
  busy: { 'Retry-After': '1' },
};

/**
 * The single mapping from anything thrown while answering a request to what the client sees: an
 * `RequestError` as it says, anything else a generic 500 whose cause is logged, never shown.
 */
export function toHttpError(error: unknown): HttpError {
  if (!(error instanceof RequestError))
    return { status: 500, message: 'Internal server error.', headers: {} };
  return {
    status: error.status,
    message: error.message,
    headers: { ...CHALLENGE[error.reason], ...error.headers },
  };
}

/** 405 for a path served with other methods, naming them in `Allow`. */
export function methodNotAllowed(method: string, allowed: readonly string[]): RequestError {
  const list = allowed.join(', ');
  return new RequestError('method_not_allowed', `${method} is not allowed on this path; allowed: ${list}.`, {
    headers: { Allow: list },
  });
}

type Issue = { path?: readonly PropertyKey[]; message: string };

/**
 * One sentence naming each offending field: "Invalid request body: id is required; name must be a
 * string." `where` names what held the fields.
 */
export function describeIssues(issues: readonly Issue[], where = 'request body'): string {
  const fields = issues.filter((issue) => (issue.path?.length ?? 0) > 0);
  const whole = issues.find((issue) => (issue.path?.length ?? 0) === 0);
  if (whole !== undefined) return `The ${where} ${whole.message}.`;
  // One message per field: a value can break several checks of the same field.
  const byField = new Map<string, string>();
  for (const issue of fields) {
    const field = issue.path!.map(String).join('.');
    if (!byField.has(field)) byField.set(field, `${field} ${issue.message}`);
  }
  return `Invalid ${where}: ${[...byField.values()].join('; ')}.`;
}
