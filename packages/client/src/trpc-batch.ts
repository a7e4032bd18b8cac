import http from 'node:http';
import https from 'node:https';
import superjson from 'superjson';
import { type NewPlant, PLANT_FIELD_NAMES, type PlantFieldName, type PlantPatch } from '@plant-store/schema';
import { answerTooLarge, MAX_ANSWER_BYTES, UnusableAnswerError } from './answer-read.ts';
import type { Backoff, Reply } from './backoff.ts';
import { failureReason, PlantStoreError } from './errors.ts';
import { traceHeaders } from './trace-context.ts';

/** Options of {@link plantsBatch}. */
export type BatchOptions = {
  baseUrl: string | URL;
  token: string;
  /** Retries of batches refused for now (429, busy 503). */
  backoff: Backoff;
  /** How long one attempt may go without an answer, in ms. */
  timeoutMs: number;
};

type Item = {
  result?: unknown;
  error?: { json?: { message?: unknown; data?: { httpStatus?: unknown } | null } | null } | null;
};
type Answer = Reply & { statusText: string; text: string };

/** A plant as an update makes it whole: every field, an absent optional one `null` (which removes it). */
export type PlantReplacement = { id: bigint } & {
  [K in PlantFieldName]-?: Exclude<PlantPatch[K], undefined>;
};

/** The replacement that makes a stored plant what `plant` says. */
export function replacementOf(plant: NewPlant): PlantReplacement {
  const replacement: Record<string, unknown> = { id: plant.id };
  for (const name of PLANT_FIELD_NAMES) replacement[name] = plant[name] ?? null;
  return replacement as PlantReplacement;
}

/**
 * Creates (`create`) or updates (`update`) plants with one tRPC batch request,
 * `POST /trpc/plants.create,plants.create,…?batch=1`, exactly what `httpBatchLink` sends
 * (superjson inputs), settling each call on its own: a failed call rejects with a
 * {@link PlantStoreError} carrying that call's status and message. Bulk imports use it instead of
 * the tRPC client, and node:http instead of `fetch`: on the client, the tRPC client's per-call
 * machinery (observables, abort signals) and `fetch`'s web streams cost more CPU than the server
 * spends on the creates. `close()` ends its kept-alive connections.
 */
export function plantsBatch({ baseUrl, token, backoff, timeoutMs }: BatchOptions) {
  const root = `${String(baseUrl).replace(/\/+$/, '')}/trpc/`;
  const secure = root.startsWith('https:');
  const agent = new (secure ? https : http).Agent({ keepAlive: true });
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };

  const post = (url: string, body: string) =>
    new Promise<Answer>((resolve, reject) => {
      const request = (secure ? https : http).request(
        url,
        {
          method: 'POST',
          agent,
          timeout: timeoutMs,
          headers: { ...headers, ...traceHeaders(), 'content-length': Buffer.byteLength(body) },
        },
        (response) => {
          let text = '';
          let bytes = 0;
          response.setEncoding('utf8');
          response.on('data', (chunk: string) => {
            bytes += Buffer.byteLength(chunk);
            if (bytes > MAX_ANSWER_BYTES) {
              request.destroy(answerTooLarge(response.statusCode ?? 0, MAX_ANSWER_BYTES));
              return;
            }
            text += chunk;
          });
          response.on('error', reject);
          response.on('end', () =>
            resolve({
              status: response.statusCode ?? 0,
              statusText: response.statusMessage ?? '',
              header: (name) => {
                const value = response.headers[name];
                return Array.isArray(value) ? value.join(', ') : value;
              },
              text,
            }),
          );
        },
      );
      request.on('timeout', () => request.destroy(new Error(`no answer within ${timeoutMs / 1000} s`)));
      request.on('error', reject);
      request.end(body);
    });

  const send = async (
    procedure: 'plants.create' | 'plants.update',
    plants: (NewPlant | PlantReplacement)[],
  ): Promise<PromiseSettledResult<unknown>[]> => {
    const named = `${root}${procedure}`;
    const everyCall = (reason: PlantStoreError) =>
      plants.map(() => ({ status: 'rejected' as const, reason }));
    const fail = (status: number, reason: string, cause?: unknown) =>
      everyCall(new PlantStoreError({ method: 'POST', url: named, status, reason, cause }));
    const body: Record<number, unknown> = {};
    plants.forEach((plant, i) => {
      body[i] = superjson.serialize(plant);
    });
    const url = `${root}${plants.map(() => procedure).join(',')}?batch=1`;
    const text = JSON.stringify(body);
    let response: Answer;
    let answer: unknown;
    try {
      response = await backoff.send(() => post(url, text));
    } catch (cause) {
      if (cause instanceof UnusableAnswerError) return fail(cause.status, cause.message, cause);
      return fail(0, failureReason(cause), cause);
    }
    try {
      answer = JSON.parse(response.text);
    } catch (cause) {
      return fail(response.status, 'the answer is not JSON', cause);
    }
    // A request refused as a whole (a rate limit, the batch too large) is one tRPC error, which
    // every call gets, as @trpc/client hands it out.
    const items = Array.isArray(answer) ? answer : isItem(answer) ? plants.map(() => answer) : undefined;
    if (items?.length !== plants.length) {
      return fail(response.status, response.statusText || 'the answer is not a tRPC batch answer');
    }
    if (!items.every(isItem)) return fail(response.status, 'the answer is not a tRPC batch answer');
    return items.map((item) => {
      if (item.error === undefined) return { status: 'fulfilled', value: item.result };
      const status = item.error?.json?.data?.httpStatus;
      const message = item.error?.json?.message;
      const known = typeof status === 'number' && typeof message === 'string';
      return {
        status: 'rejected',
        reason: new PlantStoreError({
          method: 'POST',
          url: named,
          status: known ? status : response.status,
          ...(known ? { body: { error: status, message } } : { reason: 'the answer is not a tRPC error' }),
        }),
      };
    });
  };
  return {
    create: (plants: NewPlant[]) => send('plants.create', plants),
    update: (plants: PlantReplacement[]) => send('plants.update', plants),
    close: () => agent.destroy(),
  };
}

function isItem(value: unknown): value is Item {
  return typeof value === 'object' && value !== null && ('result' in value || 'error' in value);
}
