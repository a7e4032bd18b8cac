import { createTRPCClient, httpBatchLink, TRPCClientError } from '@trpc/client';
import superjson from 'superjson';
import { describe, expect, it } from 'vitest';
import { MAX_BATCH_CALLS } from '../../src/trpc/http-adapter.ts';
import type { AppRouter } from '../../src/trpc/router.ts';
import { apiOnStore } from '../support/api-on-store.ts';
import type { RunningApi } from '../support/in-process.ts';
import { JSON_HEADERS, send, TOKEN } from '../support/http.ts';
import { type TestStoreInstance, testStores } from '../support/stores.ts';

const AUTH = { authorization: `Bearer ${TOKEN}` };

/** tRPC's error body for a refused batch of `calls` calls, as the server sends it. */
function tooLarge(calls: number): string {
  return JSON.stringify({
    error: {
      json: {
        message: `A batch may hold at most 100 calls; this one holds ${calls}.`,
        code: -32013,
        data: { code: 'PAYLOAD_TOO_LARGE', httpStatus: 413 },
      },
    },
  });
}

/** A raw batch of `calls` creates, as httpBatchLink sends one: ids from `first`. */
function createBatch(first: number, calls: number): { path: string; body: string } {
  const inputs = Object.fromEntries(
    Array.from({ length: calls }, (_, i) => [
      i,
      superjson.serialize({ id: BigInt(first + i), name: 'Fern' }),
    ]),
  );
  return {
    path: `/trpc/${Array(calls).fill('plants.create').join(',')}?batch=1`,
    body: JSON.stringify(inputs),
  };
}

/** A raw batch of `calls` list queries in the URL, as httpBatchLink sends queries. */
function listBatch(calls: number): string {
  const inputs = Object.fromEntries(Array.from({ length: calls }, (_, i) => [i, { json: { limit: 1000 } }]));
  return `/trpc/${Array(calls).fill('plants.list').join(',')}?batch=1&input=${encodeURIComponent(JSON.stringify(inputs))}`;
}

describe.each(testStores())('the size of a tRPC batch on $name', (testStore) => {
  let api: RunningApi;
  let store: TestStoreInstance;

  apiOnStore(testStore, (running) => ({ api, store } = running));

  it('is at most 100 calls', () => {
    expect(MAX_BATCH_CALLS).toBe(100);
  });

  it('refuses 500 creates in one request with 413, before any of them runs', async () => {
    const { path, body } = createBatch(1, 500);
    const answer = await send(`${api.url}${path}`, { method: 'POST', headers: JSON_HEADERS, body });
    expect(answer.status).toBe(413);
    expect(answer.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(answer.text).toBe(tooLarge(500));
    expect(await store.ids()).toEqual([]);
  });

  it('refuses 200 list queries in a GET with 413', async () => {
    const answer = await send(`${api.url}${listBatch(200)}`, { headers: AUTH });
    expect(answer.status).toBe(413);
    expect(answer.text).toBe(tooLarge(200));
  });

  it('runs a batch of exactly 100 calls, mutations and queries', async () => {
    const { path, body } = createBatch(1, 100);
    const created = await send(`${api.url}${path}`, { method: 'POST', headers: JSON_HEADERS, body });
    expect(created.status).toBe(200);
    expect(created.json).toEqual(Array(100).fill({ result: { data: { json: { name: 'Fern' } } } }));
    expect(await store.ids()).toEqual(Array.from({ length: 100 }, (_, i) => BigInt(i + 1)));
    const listed = await send(`${api.url}${listBatch(100)}`, { headers: AUTH });
    expect(listed.status).toBe(200);
    expect((listed.json as unknown[]).length).toBe(100);
  });

  it('fails every call of an oversized batch from @trpc/client with PAYLOAD_TOO_LARGE', async () => {
    // A client that does not split its batches (httpBatchLink's maxItems defaults to Infinity).
    const trpc = createTRPCClient<AppRouter>({
      links: [httpBatchLink({ url: `${api.url}/trpc`, transformer: superjson, headers: AUTH })],
    });
    const results = await Promise.allSettled(
      Array.from({ length: 101 }, (_, i) =>
        trpc.plants.create.mutate({ id: 5000n + BigInt(i), name: 'Fern' }),
      ),
    );
    for (const result of results) {
      expect(result.status).toBe('rejected');
      const error = (result as PromiseRejectedResult).reason as TRPCClientError<AppRouter>;
      expect(error).toBeInstanceOf(TRPCClientError);
      expect(error.message).toBe('A batch may hold at most 100 calls; this one holds 101.');
      expect(error.data).toEqual({ code: 'PAYLOAD_TOO_LARGE', httpStatus: 413 });
    }
    expect((await store.ids()).filter((id) => id >= 5000n)).toEqual([]);
    // Split at the limit, the same calls all succeed.
    const split = createTRPCClient<AppRouter>({
      links: [
        httpBatchLink({
          url: `${api.url}/trpc`,
          transformer: superjson,
          headers: AUTH,
          maxItems: MAX_BATCH_CALLS,
        }),
      ],
    });
    await Promise.all(
      Array.from({ length: 101 }, (_, i) =>
        split.plants.create.mutate({ id: 5000n + BigInt(i), name: 'Fern' }),
      ),
    );
    expect((await store.ids()).filter((id) => id >= 5000n)).toHaveLength(101);
  });
});
