import {
  ApiErrorSchema,
  INTEGER_LITERAL,
  type ListPlantsQuery,
  type NewPlant,
  type Plant,
  type PlantId,
  PlantSchema,
  type PlantWithId,
  PlantWithIdSchema,
  parseJson,
  stringifyJson,
} from '@plant-store/schema';
import { z } from 'zod';
import { failureReason, PlantStoreError } from './errors.ts';
import { idempotencyKeyHeader, keyFor, markRetriable, type RetryOptions, withRetries } from './retry.ts';

export { PlantStoreError, type RetryOptions };

/** Options of {@link createRestClient}. */
export type RestClientOptions = {
  /** Where the server is, such as `http://127.0.0.1:3000` (no trailing `/plants`). */
  baseUrl: string | URL;
  /** A bearer token the server accepts (one of its `API_TOKENS`). */
  token: string;
  /** The `fetch` to use instead of the global one. */
  fetch?: typeof globalThis.fetch;
  /**
   * How creates and deletes are retried (see {@link RetryOptions}); 3 attempts by default. While
   * retries are on, each create and delete carries an `Idempotency-Key` (a new random UUID).
   */
  retry?: RetryOptions;
};

/** Options of one call. */
export type CallOptions = {
  /** Aborts the call, e.g. `AbortSignal.timeout(5_000)`; it then fails with `status` 0. */
  signal?: AbortSignal;
  /**
   * `createPlant` and `deletePlant`: the `Idempotency-Key` sent with every attempt of this call; a
   * new random UUID when omitted (none with retries off). Pass your own to retry across processes.
   */
  idempotencyKey?: string;
};

/** One page of {@link RestClient.listPlants}. */
export type PlantPage = {
  /** The plants of this page, in ascending id order. */
  plants: PlantWithId[];
  /**
   * The `after` of the next page (the server's `Link: <…>; rel="next"`), or `undefined` when this
   * page is the last one.
   */
  next: PlantId | undefined;
};

/** The Plant Store over its REST API. Every method throws only {@link PlantStoreError}. */
export type RestClient = {
  /** `POST /plants`: creates a plant and resolves to it as the server answered (`Plant`, no id). */
  createPlant(plant: NewPlant, options?: CallOptions): Promise<Plant>;
  /**
   * `GET /plants`: one page of at most `limit` plants (server default 100, at most 1000) with ids
   * greater than `after`. Pass the page's `next` as `after` to read the following page.
   */
  listPlants(query?: ListPlantsQuery, options?: CallOptions): Promise<PlantPage>;
  /** `GET /plants/{id}`: the plant with this id; a 404 `PlantStoreError` when there is none. */
  getPlant(id: PlantId, options?: CallOptions): Promise<PlantWithId>;
  /** `DELETE /plants/{id}`: deletes the plant; a 404 `PlantStoreError` when there is none. */
  deletePlant(id: PlantId, options?: CallOptions): Promise<void>;
};

/** What validates an answer: a zod schema fits. */
type AnswerSchema<T> = {
  safeParse(input: unknown): { success: true; data: T } | { success: false; error: unknown };
};

type Call<T> = {
  method: string;
  path: string;
  query?: Record<string, string>;
  body?: unknown;
  /** `undefined`: a success has no body (204). */
  answer: AnswerSchema<T> | undefined;
  /** Sent as `Idempotency-Key`, and the call retried as `RetryOptions` says: a create or a delete. */
  idempotencyKey?: string;
};

type Answer<T> = { data: T; headers: Headers; url: string };

const PlantListSchema = z.array(PlantWithIdSchema);

/**
 * A client of the REST API needing only `fetch` and `@plant-store/schema`. Bodies go out and come
 * back through the exact JSON codec, so int64 ids never lose a digit.
 */
export function createRestClient(options: RestClientOptions): RestClient {
  const sendOnce = createSender(options);
  // Only keyed calls are retried: the server answers a repeat of one that did commit as it did then.
  const send = <T>(request: Call<T>, call: CallOptions = {}) =>
    request.idempotencyKey === undefined
      ? sendOnce(request, call)
      : withRetries(() => sendOnce(request, call), options.retry, call.signal);
  return {
    async createPlant(plant, call) {
      const idempotencyKey = keyFor(call?.idempotencyKey, options.retry);
      return (
        await send(
          { method: 'POST', path: '/plants', body: plant, answer: PlantSchema, idempotencyKey },
          call,
        )
      ).data;
    },
    async listPlants({ limit, after } = {}, call) {
      const query: Record<string, string> = {};
      if (limit !== undefined) query.limit = String(limit);
      if (after !== undefined) query.after = String(after);
      const { data, headers, url } = await send(
        { method: 'GET', path: '/plants', query, answer: PlantListSchema },
        call,
      );
      return { plants: data, next: nextCursor(headers.get('link'), url) };
    },
    async getPlant(id, call) {
      return (await send({ method: 'GET', path: `/plants/${id}`, answer: PlantWithIdSchema }, call)).data;
    },
    async deletePlant(id, call) {
      const idempotencyKey = keyFor(call?.idempotencyKey, options.retry);
      await send({ method: 'DELETE', path: `/plants/${id}`, answer: undefined, idempotencyKey }, call);
    },
  };
}

/** The `after` of the `rel="next"` target of a `Link` header (RFC 8288), kept exact as a bigint. */
function nextCursor(link: string | null, base: string): bigint | undefined {
  for (const [, target, params] of (link ?? '').matchAll(/<([^>]*)>([^,]*)/g)) {
    const rel = /;\s*rel\s*=\s*(?:"([^"]*)"|([^\s;]+))/i.exec(params!);
    if (!(rel?.[1] ?? rel?.[2] ?? '').toLowerCase().split(/\s+/).includes('next')) continue;
    const after = new URL(target!, base).searchParams.get('after');
    if (after !== null && INTEGER_LITERAL.test(after)) return BigInt(after);
  }
  return undefined;
}

/** Sends one call and turns its answer into `T` or a {@link PlantStoreError}. */
function createSender({ baseUrl, token, fetch = globalThis.fetch }: RestClientOptions) {
  const root = String(baseUrl).replace(/\/+$/, '');
  return async <T>(
    { method, path, query, body, answer, idempotencyKey }: Call<T>,
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
        ...(body !== undefined && { 'content-type': 'application/json' }),
        ...(idempotencyKey !== undefined && { 'idempotency-key': idempotencyKeyHeader(idempotencyKey) }),
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
      text = await response.text();
    } catch (cause) {
      throw fail({ status: response.status, reason: 'the answer could not be read', cause });
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
      if (text !== '')
        throw fail({ status: response.status, reason: 'the answer has a body where none was expected' });
      return { data: undefined as T, headers: response.headers, url };
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
    return { data: parsed.data, headers: response.headers, url };
  };
}

/** The server's `Error` body, if `text` is one. The codec reads its int32 `error` as a bigint. */
function errorBody(text: string) {
  let json: unknown;
  try {
    json = parseJson(text);
  } catch {
    return undefined;
  }
  if (typeof json === 'object' && json !== null && 'error' in json && typeof json.error === 'bigint') {
    json = { ...json, error: Number(json.error) };
  }
  const parsed = ApiErrorSchema.safeParse(json);
  return parsed.success ? parsed.data : undefined;
}
