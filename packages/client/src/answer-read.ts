/**
 * The most bytes the clients read of one answer. The api ends a page at 1 MiB of names and tags
 * (even escaped as `\u0001`, six bytes each, that stays under 7 MiB), so only a broken or hostile
 * server sends more, and it is not held in memory.
 */
export const MAX_ANSWER_BYTES = 16 * 1024 * 1024;
/** The most bytes read of a REST error answer: the api's `Error` bodies are one sentence. */
export const MAX_ERROR_ANSWER_BYTES = 64 * 1024;

/** An answer the client cannot use, with its HTTP status (it did arrive: not a network failure). */
export class UnusableAnswerError extends Error {
  constructor(
    readonly status: number,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** The body of `response` as text; fails with {@link UnusableAnswerError} past `maxBytes`, read or declared. */
export async function readAnswer(response: Response, maxBytes: number): Promise<string> {
  const tooLarge = () => answerTooLarge(response.status, maxBytes);
  if (Number(response.headers.get('content-length')) > maxBytes) {
    await response.body?.cancel().catch(() => undefined);
    throw tooLarge();
  }
  if (response.body === null) return '';
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  let bytes = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return text + decoder.decode();
    bytes += value.byteLength;
    if (bytes > maxBytes) {
      await reader.cancel().catch(() => undefined);
      throw tooLarge();
    }
    text += decoder.decode(value, { stream: true });
  }
}

/** Statuses whose answer has no body (`new Response` refuses one). */
const NO_BODY = new Set([101, 204, 205, 304]);

/**
 * A `fetch` for tRPC's links, which read each answer whole with `res.json()`: the answer is read
 * here, at most MAX_ANSWER_BYTES, and an answer that is not JSON fails with its status, where tRPC
 * would report no status at all (as if nothing had answered).
 */
export function readingFetch(fetch: typeof globalThis.fetch): typeof globalThis.fetch {
  return async (input, init) => {
    const response = await fetch(input, init);
    return new ReadAnswer(await readAnswer(response, MAX_ANSWER_BYTES), response);
  };
}

/** An answer already read into `text`. */
class ReadAnswer extends Response {
  override readonly json: () => Promise<unknown>;

  constructor(text: string, { status, statusText, headers }: Response) {
    super(NO_BODY.has(status) ? null : text, { status, statusText, headers });
    this.json = async () => {
      try {
        return JSON.parse(text);
      } catch (cause) {
        // As the REST client says it: an error answer by its status text (a proxy's 502 page).
        const reason = status >= 400 && statusText !== '' ? statusText : 'the answer is not JSON';
        throw new UnusableAnswerError(status, reason, { cause });
      }
    };
  }
}

export function answerTooLarge(status: number, maxBytes: number): UnusableAnswerError {
  const size = maxBytes >= 1024 * 1024 ? `${maxBytes / (1024 * 1024)} MiB` : `${maxBytes / 1024} KiB`;
  return new UnusableAnswerError(status, `the answer is larger than ${size}`);
}
