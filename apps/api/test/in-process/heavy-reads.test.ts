import { connect, type Socket } from 'node:net';
import { createTRPCClient, httpBatchLink, httpLink, TRPCClientError } from '@trpc/client';
import superjson from 'superjson';
import { describe, expect, it } from 'vitest';
import { MAX_HEAVY_READS } from '../../src/operations/heavy-reads.ts';
import type { AppRouter } from '../../src/trpc/router.ts';
import { PAGE_BUDGET_BYTES } from '../../src/store/contract.ts';
import { apiOnStore } from '../support/api-on-store.ts';
import { type RunningApi, startInProcess } from '../support/in-process.ts';
import { errorBody, postPlant, send, TOKEN } from '../support/http.ts';
import { type SeedPlant, type TestStoreInstance, testStores } from '../support/stores.ts';

const AUTH = { authorization: `Bearer ${TOKEN}` };
const BUSY = 'Too many lists are being read right now; retry in a second.';

/**
 * 40 rows of 60,000 U+0001 characters, written by SQL: JSON escapes each as `\u0001`, so a page of
 * 17 of them (1 MiB of text) is a 6 MB answer, more than the kernel buffers of a client that does
 * not read. Such a client keeps its answer, and its heavy-read slot, in the server.
 */
const PLANTS: SeedPlant[] = Array.from({ length: 40 }, (_, i) => ({
  id: BigInt(i + 1),
  name: '\u0001'.repeat(60_000),
}));

/** Asks for a page, reads the status line, then stops reading; resolves with the socket. */
function stalledRead(url: string): Promise<Socket> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => {
      socket.write(
        `GET /plants?limit=1000 HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: Bearer ${TOKEN}\r\n\r\n`,
      );
    });
    socket.once('error', reject);
    socket.once('data', (chunk) => {
      expect(chunk.toString('latin1')).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
      socket.pause();
      resolve(socket);
    });
  });
}

function trpcClient(url: string, batch: boolean) {
  const options = { url: `${url}/trpc`, transformer: superjson, headers: AUTH };
  return createTRPCClient<AppRouter>({ links: [batch ? httpBatchLink(options) : httpLink(options)] });
}

describe.each(testStores())('heavy reads on $name', (testStore) => {
  let api: RunningApi;
  let store: TestStoreInstance;

  apiOnStore(testStore, (running) => ({ api, store } = running), { seed: PLANTS });

  it('answers 503 with Retry-After past 8 lists in flight, serves everything else, then recovers', async () => {
    expect(MAX_HEAVY_READS).toBe(8);
    const stalled: Socket[] = [];
    for (let i = 0; i < MAX_HEAVY_READS; i++) stalled.push(await stalledRead(api.url));
    try {
      const rest = await send(`${api.url}/plants?limit=1`, { headers: AUTH });
      expect(rest.status).toBe(503);
      expect(rest.headers.get('retry-after')).toBe('1');
      expect(rest.text).toBe(errorBody(503, BUSY));

      // tRPC: its own error shape, the same message and header.
      const input = encodeURIComponent(JSON.stringify({ json: { limit: 1 } }));
      const raw = await send(`${api.url}/trpc/plants.list?input=${input}`, { headers: AUTH });
      expect(raw.status).toBe(503);
      expect(raw.headers.get('retry-after')).toBe('1');
      expect(raw.json).toEqual({
        error: {
          json: {
            message: BUSY,
            code: -32603,
            data: { code: 'SERVICE_UNAVAILABLE', httpStatus: 503, path: 'plants.list' },
          },
        },
      });
      const error = await trpcClient(api.url, false)
        .plants.list.query({ limit: 1 })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(TRPCClientError);
      expect((error as TRPCClientError<AppRouter>).message).toBe(BUSY);
      expect((error as TRPCClientError<AppRouter>).data).toMatchObject({
        code: 'SERVICE_UNAVAILABLE',
        httpStatus: 503,
      });

      // Another app in the same process keeps its own count: its lists are served.
      const other = await startInProcess();
      try {
        expect((await send(`${other.url}/plants?limit=1`, { headers: AUTH })).status).toBe(200);
      } finally {
        await other.stop();
        other.cleanup();
      }

      // Everything that is not a list goes on.
      expect((await send(`${api.url}/healthz`)).status).toBe(200);
      const created = await postPlant(api.url, '{"id":1000,"name":"Fern"}');
      expect(created.status).toBe(200);
      expect((await send(`${api.url}/plants/1000`, { headers: AUTH })).text).toBe(
        `{"id":1000,"name":"Fern","version":${created.headers.get('etag')!.slice(1, -1)}}`,
      );
    } finally {
      for (const socket of stalled) socket.destroy();
    }
    // Slots come back as soon as those answers are gone.
    await expect
      .poll(async () => (await send(`${api.url}/plants?limit=1`, { headers: AUTH })).status, {
        timeout: 5_000,
      })
      .toBe(200);
    expect(await store.ids()).toEqual([...PLANTS.map((plant) => plant.id), 1000n]);
  });

  it('counts a batch of list calls as one read, and its calls share one page budget', async () => {
    const trpc = trpcClient(api.url, true);
    // More list calls than there are slots, in one request: all answered.
    const pages = await Promise.all(
      Array.from({ length: 2 * MAX_HEAVY_READS }, () => trpc.plants.list.query({ limit: 1000 })),
    );
    // Each call of 16 gets 1/16 of the budget: 65,536 bytes, one 60,000-byte row (plus one more
    // never fits), so the batch holds no more than one page would.
    for (const page of pages) {
      expect(page.plants.map((plant) => plant.id)).toEqual([1n]);
      expect(page.next).toBe(1n);
    }
    expect(Math.floor(PAGE_BUDGET_BYTES / pages.length)).toBe(65_536);
  });

  it('refuses a call of a batch whose next plant alone is larger than its share (413)', async () => {
    const trpc = trpcClient(api.url, true);
    // 20 calls: shares of 52,428 bytes, smaller than one 60,000-byte plant.
    const results = await Promise.allSettled(
      Array.from({ length: 20 }, () => trpc.plants.list.query({ limit: 1000 })),
    );
    for (const result of results) {
      const error = (result as PromiseRejectedResult).reason as TRPCClientError<AppRouter>;
      expect(error.data).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', httpStatus: 413 });
      expect(error.message).toBe(
        "The next plant is larger than this call's share of the page budget (52428 bytes: 1 MiB shared by 20 calls); list it in a request with fewer calls.",
      );
    }
    // Alone, the same call gets its page.
    const page = await trpcClient(api.url, false).plants.list.query({ limit: 1000 });
    expect(page.plants).toHaveLength(17);
  });
});
