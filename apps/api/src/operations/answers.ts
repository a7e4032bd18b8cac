import { z } from 'zod';

/**
 * What every operation of the api can answer besides its own answers, with the headers a client can
 * see on them: one table, which http/openapi.ts adds to every operation of the document, so none can
 * leave them out. Each header is a component of the document (`components.headers`), and each
 * shared answer one of `components.responses`.
 */

/** A response header as the document declares it, registered under `id`; optional unless `required`. */
function header(id: string, description: string, options: { required?: boolean; example?: string } = {}) {
  const schema = z.string();
  const meta = { description, header: { id }, ...(options.example && { example: options.example }) };
  return options.required ? schema.meta(meta) : schema.optional().meta(meta);
}

export const HEADERS = {
  requestId: header(
    'X-Request-Id',
    'The request’s id, as logged: the `X-Request-Id` the client sent when it is 1 to 128 of `A-Z a-z 0-9 . _ : -`, else a new UUID',
    { required: true, example: '5b0f3c1e-7f0e-4a57-9d8e-6c1f2a3b4c5d' },
  ),
  rateLimit: header(
    'RateLimit',
    'The caller’s rate limit now (draft-ietf-httpapi-ratelimit-headers): requests left (`r`) and seconds until the window resets (`t`). On every answer that passed the rate limit, while one is set (RATE_LIMIT_MAX)',
    { example: '"default";r=5999;t=60' },
  ),
  rateLimitPolicy: header(
    'RateLimit-Policy',
    'The rate limit (draft-ietf-httpapi-ratelimit-headers): `q` requests per `w` seconds, per token (per client address without a valid token)',
    { example: '"default";q=6000;w=60' },
  ),
  retryAfter: header('RetryAfter', 'Seconds to wait before trying again', { required: true, example: '30' }),
  retryAfterWhenBusy: header(
    'RetryAfterWhenBusy',
    'Seconds to wait before trying again, when waiting helps (a bound of this instance, a request still in flight)',
    { example: '1' },
  ),
  wwwAuthenticate: header(
    'WWW-Authenticate',
    'The bearer challenge (RFC 6750): `Bearer` without a token, `Bearer error="invalid_token"` with one that is not valid',
    { required: true, example: 'Bearer' },
  ),
  allow: header('Allow', 'The methods the path is served with', {
    required: true,
    example: 'GET, HEAD, POST',
  }),
  etag: header('ETag', 'The plant’s version as a strong entity tag: its `version` in double quotes', {
    required: true,
    example: '"42"',
  }),
  etagAfterChange: header(
    'ETagAfterChange',
    'The plant’s version after the change, as a strong entity tag (absent only on the replay of a create stored before versions were kept)',
    { example: '"42"' },
  ),
  link: header('Link', 'The next page, as `<url>; rel="next"` (RFC 8288), while more remain', {
    example: '</plants?limit=100&after=42>; rel="next"',
  }),
  idempotentReplayed: header(
    'Idempotent-Replayed',
    '`true` when this is the stored answer to an earlier request with the same Idempotency-Key',
    { example: 'true' },
  ),
  contentLocation: header(
    'Content-Location',
    'The plant this answer describes, `/plants/{id}` (RFC 9110 §8.7), with the id exactly as stored: a client that lost precision on an int64 id can read it back here',
    { required: true, example: '/plants/9007199254740993' },
  ),
};

/** The headers on every answer of an operation that checks a token. */
export const EVERY_ANSWER_HEADERS = z.object({
  'X-Request-Id': HEADERS.requestId,
  RateLimit: HEADERS.rateLimit,
  'RateLimit-Policy': HEADERS.rateLimitPolicy,
});

/** The headers on every answer of the probes (not rate limited). */
export const PROBE_HEADERS = z.object({ 'X-Request-Id': HEADERS.requestId });

/** The `X-Request-Id` a client may send, as the document declares it on every operation. */
export const RequestIdParam = z
  .string()
  .optional()
  .meta({
    description:
      'An id for this request, echoed in the answer’s `X-Request-Id` and in the log when it is 1 to 128 of ' +
      '`A-Z a-z 0-9 . _ : -`; any other value is not refused, and the answer then carries a new id',
    param: { id: 'RequestId' },
  });

type SharedAnswer = { id: string; description: string; headers?: Record<string, z.ZodType> };

/**
 * The statuses every operation that checks a bearer token can answer besides its own (an operation
 * may word one for itself), and the headers each carries besides `EVERY_ANSWER_HEADERS`.
 */
export const PROTECTED_ANSWERS: Record<401 | 403 | 429 | 500 | 503, SharedAnswer> = {
  401: {
    id: 'Unauthorized',
    description: 'Missing or unknown bearer token',
    headers: { 'WWW-Authenticate': HEADERS.wwwAuthenticate },
  },
  403: { id: 'Forbidden', description: 'The token lacks the scope this operation needs' },
  429: {
    id: 'TooManyRequests',
    description:
      'Past the rate limit (RATE_LIMIT_MAX requests per RATE_LIMIT_WINDOW_SECONDS, per token), or too many ' +
      'failed authentications from this address (AUTH_FAILURE_MAX); retry after Retry-After',
    headers: { 'Retry-After': HEADERS.retryAfter },
  },
  500: { id: 'InternalError', description: 'Internal error; the details are only in the server log' },
  503: {
    id: 'Unavailable',
    description: 'The store is unavailable; retry later',
    headers: { 'Retry-After': HEADERS.retryAfterWhenBusy },
  },
};

/** 405: any path of the document answers a method it is not served with so (a shared answer). */
export const METHOD_NOT_ALLOWED: SharedAnswer = {
  id: 'MethodNotAllowed',
  description:
    'The path is served, but not with this method: `Allow` lists the methods it is (every GET is also served as HEAD)',
  headers: { Allow: HEADERS.allow },
};

/** 304: a GET whose `If-None-Match` names the answer's `ETag` (or is `*`). */
export const NOT_MODIFIED: SharedAnswer = {
  id: 'NotModified',
  description: 'If-None-Match names the current ETag (or is `*`): nothing changed since, and no body is sent',
  headers: { ETag: HEADERS.etag },
};
