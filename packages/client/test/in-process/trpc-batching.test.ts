import { inProcessPerFile } from '@plant-store/api/testing/in-process';
import { describe, expect, it, vi } from 'vitest';
import { createTrpcClient, PlantStoreError } from '../../src/index.ts';

const TOKEN = 'batch-test-token-0123456789';

const api = inProcessPerFile({ token: TOKEN });

/**
 * A client whose every HTTP request is recorded as the list of procedures it carried. Retries are
 * off: keyed (retried) creates are sent one per request, while these creates are batched.
 */
function countingClient(batch?: { maxItems?: number }) {
  const requests: string[][] = [];
  const client = createTrpcClient({
    baseUrl: api.url,
    token: TOKEN,
    retry: { attempts: 1 },
    ...(batch && { batch }),
    fetch: (input, init) => {
      requests.push(new URL(String(input)).pathname.slice('/trpc/'.length).split(','));
      return fetch(input, init);
    },
  });
  return { client, requests };
}

/** The procedure paths of the /trpc requests the server logged after `from` log lines. */
function trpcRequestsLogged(from: number): string[] {
  return api.logs
    .slice(from)
    .map((line) => JSON.parse(line) as { msg?: string; path?: string })
    .filter((entry) => entry.msg === 'request' && entry.path?.startsWith('/trpc/'))
    .map((entry) => entry.path!);
}

describe('tRPC client batching', () => {
  it('sends concurrent calls in requests of at most maxItems', async () => {
    const { client, requests } = countingClient({ maxItems: 4 });
    const logged = api.logs.length;
    const ids = Array.from({ length: 10 }, (_, i) => 1000n + BigInt(i));

    const plants = await Promise.all(
      ids.map((id) => client.plants.create.mutate({ id, name: `Plant ${id}` })),
    );

    expect(plants).toStrictEqual(ids.map((id) => ({ name: `Plant ${id}` })));
    expect(requests.map((procedures) => procedures.length)).toStrictEqual([4, 4, 2]);
    expect(requests.flat().every((path) => path === 'plants.create')).toBe(true);
    // The server saw the same three requests, not ten.
    await vi.waitFor(() => expect(trpcRequestsLogged(logged)).toHaveLength(3));
  });

  it('puts at most 10 calls in one request by default', async () => {
    const { client, requests } = countingClient();
    const ids = Array.from({ length: 12 }, (_, i) => 2000n + BigInt(i));

    await Promise.all(ids.map((id) => client.plants.create.mutate({ id, name: 'Fern' })));

    expect(requests.map((procedures) => procedures.length)).toStrictEqual([10, 2]);
  });

  it('fails only the failing call of a batch, with that call’s own status', async () => {
    const { client, requests } = countingClient();
    await client.plants.create.mutate({ id: 3000n, name: 'First' });
    requests.length = 0;

    const results = await Promise.allSettled([
      client.plants.create.mutate({ id: 3001n, name: 'New' }),
      client.plants.create.mutate({ id: 3000n, name: 'Duplicate' }),
      client.plants.create.mutate({ id: 3002n, name: 'Also new', tag: 'x' }),
    ]);

    expect(requests).toHaveLength(1);
    expect(results[0]).toStrictEqual({ status: 'fulfilled', value: { name: 'New' } });
    expect(results[2]).toStrictEqual({ status: 'fulfilled', value: { name: 'Also new', tag: 'x' } });
    const failed = results[1];
    expect(failed?.status).toBe('rejected');
    const error = (failed as PromiseRejectedResult).reason;
    expect(error).toBeInstanceOf(PlantStoreError);
    expect(error).toMatchObject({
      status: 409,
      error: 409,
      serverMessage: 'A plant with id 3000 already exists.',
    });
  });
});
