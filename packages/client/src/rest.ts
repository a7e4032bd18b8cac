import {
  ApiErrorSchema,
  type NewPlant,
  type Plant,
  PlantSchema,
  parseJson,
  stringifyJson,
} from '@plant-store/schema';
import { failureReason, PlantStoreError } from './errors.ts';

export { PlantStoreError };

/** Options of {@link createRestClient}. */
export type RestClientOptions = {
  /** Where the server is, such as `http://127.0.0.1:3000` (no trailing `/plants`). */
  baseUrl: string | URL;
  /** A bearer token the server accepts (one of its `API_TOKENS`). */
  token: string;
  /** The `fetch` to use instead of the global one. */
  fetch?: typeof globalThis.fetch;
};

/** Options of one call. */
export type CallOptions = {
  /** Aborts the call, e.g. `AbortSignal.timeout(5_000)`; it then fails with `status` 0. */
  signal?: AbortSignal;
};

/** The Plant Store over its REST API. Every method throws only {@link PlantStoreError}. */
export type RestClient = {
  /** `POST /plants`: creates a plant and resolves to it as the server answered (`Plant`, no id). */
  createPlant(plant: NewPlant, options?: CallOptions): Promise<Plant>;
};

/** What validates an answer: a zod schema fits. */
type AnswerSchema<T> = {
  safeParse(input: unknown): { success: true; data: T } | { success: false; error: unknown };
};

type Call<T> = { method: string; path: string; body?: unknown; answer: AnswerSchema<T> };

/**
 * A client of the REST API needing only `fetch` and `@plant-store/schema`. Bodies go out and come
 * back through the exact JSON codec, so int64 ids never lose a digit.
 */
export function createRestClient(options: RestClientOptions): RestClient {
  const send = createSender(options);
  return {
    createPlant: (plant, call) =>
      send({ method: 'POST', path: '/plants', body: plant, answer: PlantSchema }, call),
  };
}

/** Sends one call and turns its answer into `T` or a {@link PlantStoreError}. */
function createSender({ baseUrl, token, fetch = globalThis.fetch }: RestClientOptions) {
  const root = String(baseUrl).replace(/\/+$/, '');
  return async <T>({ method, path, body, answer }: Call<T>, call: CallOptions = {}): Promise<T> => {
    const url = `${root}${path}`;
    const fail = (init: { status: number; reason: string; cause?: unknown }) =>
      new PlantStoreError({ method, url, ...init });

    const init: RequestInit = {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        accept: 'application/json',
        ...(body !== undefined && { 'content-type': 'application/json' }),
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
      if (error) throw new PlantStoreError({ method, url, status: response.status, body: error });
      throw fail({
        status: response.status,
        reason: response.statusText || 'the answer is not an Error body',
      });
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
    return parsed.data;
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
