import { ApiErrorSchema, parseJson, stringifyJson } from '@plant-store/schema';
import { MAX_ANSWER_BYTES, MAX_ERROR_ANSWER_BYTES, readAnswer, UnusableAnswerError } from './answer-read.ts';
import { failureReason, PlantStoreError } from './errors.ts';
import { idempotencyKeyHeader, markRetriable } from './retry.ts';
import { traceHeaders } from './trace-context.ts';

/** Options of one call. */
export type CallOptions = {
  /** Aborts the call, e.g. `AbortSignal.timeout(5_000)`; it then fails with `status` 0. */
  signal?: AbortSignal;
  /**
   * `createPlant`, `updatePlant` and `deletePlant`: the `Idempotency-Key` sent with every attempt of this call; a
   * new random UUID when omitted (none with retries off). Pass your own to retry across processes.
   */
  idempotencyKey?: string;
};

/** The media type of a JSON Merge Patch (RFC 7396), the body of every `PATCH`. */
export const MERGE_PATCH = 'application/merge-patch+json';

/** What validates an answer: a zod schema fits. */
export type AnswerSchema<T> = {
  safeParse(input: unknown): { success: true; data: T } | { success: false; error: unknown };
};

/** One REST call, as the client methods describe it. */
export type Call<T> = {
  method: string;
  path: string;
  query?: Record<string, string>;
  body?: unknown;
  /** `undefined`: a success has no body (204). */
  answer: AnswerSchema<T> | undefined;
  /** Sent as `Idempotency-Key`, and the call retried as `RetryOptions` says: a create, update or delete. */
  idempotencyKey?: string;
  /**
   * Safe to send again without a key, so retried as `RetryOptions` says: `'safe'` for a call whose
   * repeat changes nothing more (a read, a redelivery), `'delete'` for a delete (a 404 after an
   * attempt that may have deleted it then counts as done).
   */
  repeatable?: 'safe' | 'delete';
  /** The query parameter that names the next page in the answer's `Link: <…>; rel="next"`. */
  next?: string;
  /** Conditional request headers (`if-match`, `if-none-match`); with `if-none-match`, a 304 is an answer. */
  conditions?: { 'if-match'?: string; 'if-none-match'?: string };
  /** The body's media type when not `application/json` (a merge patch). */
  contentType?: string;
};

export type Answer<T> = {
  /** The answer's body; `undefined` for a 304 (Not Modified). */
  data: T;
  status: number;
  headers: Headers;
  url: string;
  /** The `next` parameter of the answer's next page; `undefined` on the last page. */
  next?: string;
};

/** Where the server is and how to be let in. */
type Server = { baseUrl: string | URL; token: string; fetch?: typeof globalThis.fetch };

/** Sends one attempt of a call and turns its answer into `T` or a {@link PlantStoreError}. */
export function createSender({ baseUrl, token, fetch = globalThis.fetch }: Server) {
  const root = String(baseUrl).replace(/\/+$/, '');
  return async <T>(
    { method, path, query, body, answer, idempotencyKey, next, conditions, contentType }: Call<T>,
    call: CallOptions = {},
  ): Promise<Answer<T>> => {
    const search = new URLSearchParams(query).toString();
    const url = `${root}${path}${search && `?${search}`}`;
    const fail = (init: { status: number; reason: string; cause?: unknown }) =>
      new PlantStoreError({ method, url, ...init });

    const init: RequestInit = {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        accept: 'application/json',
        ...(body !== undefined && { 'content-type': contentType ?? 'application/json' }),
        ...conditions,
        ...(idempotencyKey !== undefined && { 'idempotency-key': idempotencyKeyHeader(idempotencyKey) }),
        ...traceHeaders(),
      },
      ...(body !== undefined && { body: stringifyJson(body) }),
      ...(call.signal && { signal: call.signal }),
    };
    let response: Response;
    let text: string;
    try {
      response = await fetch(url, init);
    } catch (cause) {
      // No answer at all (refused, reset, DNS, abort): one error type for callers, status 0.
      throw fail({ status: 0, reason: failureReason(cause), cause });
    }
    try {
      text = await readAnswer(response, response.ok ? MAX_ANSWER_BYTES : MAX_ERROR_ANSWER_BYTES);
    } catch (cause) {
      const reason = cause instanceof UnusableAnswerError ? cause.message : 'the answer could not be read';
      throw fail({ status: response.status, reason, cause });
    }

    const { status, headers } = response;
    if (status === 304 && conditions?.['if-none-match'] !== undefined) {
      return { data: undefined as T, status, headers, url };
    }
    if (!response.ok) {
      const error = errorBody(text);
      const failure = error
        ? new PlantStoreError({ method, url, status: response.status, body: error })
        : fail({ status: response.status, reason: response.statusText || 'the answer is not an Error body' });
      // A 409 with Retry-After: the same Idempotency-Key is still in flight (not a duplicate id).
      if (response.status === 409 && response.headers.has('retry-after')) markRetriable(failure);
      throw failure;
    }
    if (answer === undefined) {
      if (text !== '') throw fail({ status, reason: 'the answer has a body where none was expected' });
      return { data: undefined as T, status, headers, url };
    }
    let json: unknown;
    try {
      json = parseJson(text);
    } catch (cause) {
      throw fail({ status: response.status, reason: 'the answer is not JSON', cause });
    }
    const parsed = answer.safeParse(json);
    if (!parsed.success) {
      throw fail({
        status: response.status,
        reason: 'the answer is not what the API describes',
        cause: parsed.error,
      });
    }
    if (next === undefined) return { data: parsed.data, status, headers, url };
    try {
      return { data: parsed.data, status, headers, url, next: nextLinkParam(headers.get('link'), url, next) };
    } catch (cause) {
      const reason = `the answer's Link header is malformed (${(cause as Error).message})`;
      throw fail({ status, reason, cause });
    }
  };
}

/** The error for an answer the caller found it cannot use. */
export function unusableAnswer({ status, url }: Answer<unknown>, method: string, reason: string) {
  return new PlantStoreError({ method, url, status, reason });
}

/** The server's `Error` body, if `text` is one. */
export function errorBody(text: string) {
  let json: unknown;
  try {
    json = parseJson(text);
  } catch {
    return undefined;
  }
  const parsed = withSmallIntegers(ApiErrorSchema).safeParse(json);
  return parsed.success ? parsed.data : undefined;
}

/**
 * `schema` for a body whose integers are all small (statuses, counts): the exact codec reads every
 * integer as a `bigint`, and these become numbers before `schema` checks them.
 */
export function withSmallIntegers<T>(schema: AnswerSchema<T>): AnswerSchema<T> {
  return { safeParse: (input) => schema.safeParse(smallIntegersAsNumbers(input)) };
}

function smallIntegersAsNumbers(value: unknown): unknown {
  if (typeof value === 'bigint') return Number.isSafeInteger(Number(value)) ? Number(value) : value;
  if (Array.isArray(value)) return value.map(smallIntegersAsNumbers);
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [key, smallIntegersAsNumbers(item)]),
    );
  }
  return value;
}

/**
 * The query parameter `name` of the `rel="next"` target of a `Link` header (RFC 8288). Throws
 * when that target is not a URL, or has no such parameter: a next page the client cannot read
 * must not pass for the last page.
 */
function nextLinkParam(link: string | null, base: string, name: string): string | undefined {
  for (const [, target, params] of (link ?? '').matchAll(/<([^>]*)>([^,]*)/g)) {
    const rel = /;\s*rel\s*=\s*(?:"([^"]*)"|([^\s;]+))/i.exec(params!);
    if (!(rel?.[1] ?? rel?.[2] ?? '').toLowerCase().split(/\s+/).includes('next')) continue;
    const value = new URL(target!, base).searchParams.get(name);
    if (value === null) throw new Error(`the next page's URL has no ${name} parameter`);
    return value;
  }
  return undefined;
}
