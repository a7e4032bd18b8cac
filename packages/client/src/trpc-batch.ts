import type { NewPlant } from '@plant-store/schema';
import superjson from 'superjson';
import { failureReason, PlantStoreError } from './errors.ts';

/** Options of {@link plantsCreateBatch}. */
export type BatchOptions = {
  baseUrl: string | URL;
  token: string;
  fetch?: typeof globalThis.fetch;
};

type Item = { result?: unknown; error?: { json?: { message?: unknown; data?: { httpStatus?: unknown } } } };

/**
 * Creates plants with one tRPC batch request, `POST /trpc/plants.create,plants.create,…?batch=1`,
 * exactly what `httpBatchLink` sends (superjson inputs), settling each call on its own: a failed
 * call rejects with a {@link PlantStoreError} carrying that call's status and message. Bulk
 * imports use it instead of the tRPC client, whose per-call machinery (observables, abort
 * signals) costs more CPU than the server spends on a create.
 */
export function plantsCreateBatch({ baseUrl, token, fetch = globalThis.fetch }: BatchOptions) {
  const root = `${String(baseUrl).replace(/\/+$/, '')}/trpc/`;
  const named = `${root}plants.create`;
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };

  return async (plants: NewPlant[]): Promise<PromiseSettledResult<unknown>[]> => {
    const everyCall = (reason: PlantStoreError) =>
      plants.map(() => ({ status: 'rejected' as const, reason }));
    const fail = (status: number, reason: string, cause?: unknown) =>
      everyCall(new PlantStoreError({ method: 'POST', url: named, status, reason, cause }));
    const body: Record<number, unknown> = {};
    plants.forEach((plant, i) => {
      body[i] = superjson.serialize(plant);
    });
    const url = `${root}${plants.map(() => 'plants.create').join(',')}?batch=1`;
    let response: Response;
    let answer: unknown;
    try {
      response = await fetch(url, { method: 'POST', headers, body: JSON.stringify(body) });
    } catch (cause) {
      return fail(0, failureReason(cause), cause);
    }
    try {
      answer = JSON.parse(await response.text());
    } catch (cause) {
      return fail(response.status, 'the answer is not JSON', cause);
    }
    if (!Array.isArray(answer) || answer.length !== plants.length) {
      // Refused as a whole outside tRPC (rate limit, body too large…): an `Error` body, or nothing usable.
      const { error, message } = (answer ?? {}) as { error?: unknown; message?: unknown };
      if (typeof error === 'number' && typeof message === 'string') {
        return everyCall(
          new PlantStoreError({
            method: 'POST',
            url: named,
            status: response.status,
            body: { error, message },
          }),
        );
      }
      return fail(response.status, response.statusText || 'the answer is not a tRPC batch answer');
    }
    return (answer as Item[]).map((item) => {
      if (item.error === undefined) return { status: 'fulfilled', value: item.result };
      const status = item.error.json?.data?.httpStatus;
      const message = item.error.json?.message;
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
}
