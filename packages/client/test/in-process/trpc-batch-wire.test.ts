import { once } from 'node:events';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { AppRouter } from '@plant-store/api';
import { inProcessPerFile } from '@plant-store/api/testing/in-process';
import type { NewPlant } from '@plant-store/schema';
import { createTRPCClient, httpBatchLink } from '@trpc/client';
import superjson from 'superjson';
import { afterAll, describe, expect, it } from 'vitest';
import { createBackoff } from '../../src/backoff.ts';
import { createTrpcClient, type PlantStoreError } from '../../src/index.ts';
import { type PlantReplacement, plantsBatch, replacementOf } from '../../src/trpc-batch.ts';

/**
 * `plantsBatch` (the bulk import's sender) writes and reads tRPC's batch wire format itself,
 * because @trpc/client cost an import several times its CPU per plant (docs/architecture.md, Going
 * around a library). These tests hold it to what @trpc/client does, so a tRPC upgrade that changes
 * the format fails here first, with a message saying so.
 */
const TOKEN = 'wire-test-token-0123456789';
const PLANTS: NewPlant[] = [
  { id: 1n, name: 'Fern' },
  { id: -(2n ** 63n), name: 'Moss', tag: 'wet' },
  { id: 2n ** 63n - 1n, name: 'Ivy' },
];

const closers: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const close of closers) await close();
});

// Whole plants, every field of PLANT_FIELDS (an absent one null).
const REPLACEMENTS: PlantReplacement[] = [
  replacementOf({ id: 1n, name: 'Fern' }),
  replacementOf({ id: 2n ** 63n - 1n, name: 'Ivy', tag: 'climber' }),
];

describe('the tRPC batch wire format of plantsBatch', () => {
  it('sends exactly what httpBatchLink sends for the same creates and updates', async () => {
    const seen: { method?: string; url?: string; type?: string; body: string }[] = [];
    const server = createServer(async (req: IncomingMessage, res) => {
      let body = '';
      for await (const chunk of req) body += chunk;
      seen.push({ method: req.method, url: req.url, type: req.headers['content-type'], body });
      const calls = decodeURIComponent(new URL(req.url!, 'http://x').pathname).split(',').length;
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(Array.from({ length: calls }, () => ({ result: { data: { json: null } } }))));
    }).listen(0, '127.0.0.1');
    await once(server, 'listening');
    closers.push(() => new Promise((resolve) => server.close(resolve)));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

    const trpc = createTRPCClient<AppRouter>({
      links: [httpBatchLink({ url: `${url}/trpc`, transformer: superjson, headers: { authorization: 'x' } })],
    });
    await Promise.all(PLANTS.map((plant) => trpc.plants.create.mutate(plant)));
    await Promise.all(REPLACEMENTS.map((plant) => trpc.plants.update.mutate(plant)));
    const batches = plantsBatch({
      baseUrl: url,
      token: TOKEN,
      backoff: createBackoff(),
      timeoutMs: 5_000,
    });
    closers.push(async () => batches.close());
    await batches.create(PLANTS);
    await batches.update(REPLACEMENTS);

    expect(seen).toHaveLength(4);
    const drift =
      'plantsBatch no longer sends what httpBatchLink sends (it goes around @trpc/client by the rule of docs/architecture.md, Going around a library: make it follow, or go back to httpBatchLink)';
    expect(seen[2], drift).toEqual(seen[0]);
    expect(seen[3], drift).toEqual(seen[1]);
    expect(seen[1]!.url).toBe('/trpc/plants.update,plants.update?batch=1');
  });

  describe('against the api', () => {
    const api = inProcessPerFile({
      token: TOKEN,
      env: { RATE_LIMIT_MAX: '12', RATE_LIMIT_WINDOW_SECONDS: '60' },
    });

    /** What each call was told: created, or the status and server message of its PlantStoreError. */
    const told = (results: PromiseSettledResult<unknown>[]) =>
      results.map((result) =>
        result.status === 'fulfilled'
          ? 'created'
          : {
              status: (result.reason as PlantStoreError).status,
              message: (result.reason as PlantStoreError).serverMessage,
            },
      );

    it('reads every call’s result and error, and a whole refusal, as the tRPC client does', async () => {
      const ours = plantsBatch({
        baseUrl: api.url,
        token: TOKEN,
        backoff: createBackoff({ attempts: 1 }),
        timeoutMs: 5_000,
      });
      closers.push(async () => ours.close());
      const client = createTrpcClient({ baseUrl: api.url, token: TOKEN, retry: { attempts: 1 } });
      const viaClient = (plants: NewPlant[]) =>
        Promise.allSettled(plants.map((plant) => client.plants.create.mutate(plant)));
      const mixed = (first: bigint): NewPlant[] => [
        { id: first, name: 'Fern' },
        { id: 1n, name: 'Duplicate' },
        { id: first + 1n, name: 'x'.repeat(201) },
      ];
      await viaClient([{ id: 1n, name: 'Fern' }]);

      const expected = [
        'created',
        { status: 409, message: 'A plant with id 1 already exists.' },
        { status: 400, message: 'Invalid request body: name must be at most 200 characters.' },
      ];
      const wire =
        'plantsBatch no longer reads tRPC answers as @trpc/client does (it goes around @trpc/client by the rule of docs/architecture.md, Going around a library: make it follow, or go back to httpBatchLink)';
      expect(told(await viaClient(mixed(10n)))).toEqual(expected);
      expect(told(await ours.create(mixed(20n))), wire).toEqual(expected);

      // 7 points spent: a batch of 6 is refused whole, in tRPC's shape, with the rate limit's message.
      const six = Array.from({ length: 6 }, (_, i) => ({ id: 100n + BigInt(i), name: 'Fern' }));
      const refused = told(await ours.create(six));
      expect(refused, wire).toEqual(
        six.map(() => ({
          status: 429,
          message: expect.stringMatching(/^Too many requests: the limit is 12 per 60 s/),
        })),
      );
      expect(told(await viaClient(six.slice(0, 2)))).toEqual(refused.slice(0, 2));
    });
  });
});
