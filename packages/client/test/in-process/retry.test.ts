import { type RunningApi, startInProcess } from '@plant-store/api/testing/in-process';
import { startProxy, type Proxy as TcpProxy } from '@plant-store/api/testing/tcp-proxy';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  createRestClient,
  createTrpcClient,
  type NewPlant,
  type Plant,
  type PlantId,
  type PlantPatch,
  type PlantWithId,
} from '../../src/index.ts';
import { rejectionOf } from '../support/clients.ts';

const TOKEN = 'client-test-token-0123456789';
const SF_UUID = /^"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"$/;

/** One HTTP attempt as the client's `fetch` saw it. */
type Attempt = { key: string | null; status: number; replayed: string | null };

/** A `fetch` that records each attempt's Idempotency-Key and what came back (status 0: no answer). */
function recordingFetch(attempts: Attempt[]): typeof fetch {
  return async (input, init) => {
    const key = new Headers(init?.headers).get('idempotency-key');
    try {
      const response = await fetch(input, init);
      attempts.push({ key, status: response.status, replayed: response.headers.get('idempotent-replayed') });
      return response;
    } catch (error) {
      attempts.push({ key, status: 0, replayed: null });
      throw error;
    }
  };
}

type Options = { baseUrl: string; token: string; fetch: typeof fetch; retry?: { attempts?: number } };
type Keyed = {
  create(plant: NewPlant, idempotencyKey?: string): Promise<Plant>;
  update(id: PlantId, patch: PlantPatch): Promise<PlantWithId>;
  delete(id: PlantId): Promise<void>;
  list(): Promise<unknown>;
};

const clients: { name: string; connect(options: Options): Keyed }[] = [
  {
    name: 'REST client',
    connect(options) {
      const client = createRestClient(options);
      return {
        create: (plant, idempotencyKey) =>
          client.createPlant(plant, { ...(idempotencyKey && { idempotencyKey }) }),
        update: async (id, patch) => {
          const { etag, ...plant } = await client.updatePlant(id, patch);
          expect(etag).toBe(`"${plant.version}"`);
          return plant;
        },
        delete: (id) => client.deletePlant(id),
        list: () => client.listPlants(),
      };
    },
  },
  {
    name: 'tRPC client',
    connect(options) {
      const client = createTrpcClient(options);
      return {
        create: (plant, idempotencyKey) =>
          client.plants.create.mutate(plant, { ...(idempotencyKey && { context: { idempotencyKey } }) }),
        update: (id, patch) => client.plants.update.mutate({ id, ...patch }),
        delete: (id) => client.plants.delete.mutate({ id }),
        list: () => client.plants.list.query({}),
      };
    },
  },
];

describe.each(clients)('the $name over a connection cut after the request is sent', (kind) => {
  let api: RunningApi;
  let proxy: TcpProxy;
  let attempts: Attempt[];
  let client: Keyed;
  /** Reads the store past the proxy. */
  let direct: ReturnType<typeof createRestClient>;

  beforeAll(async () => {
    api = await startInProcess({ token: TOKEN });
    direct = createRestClient({ baseUrl: api.url, token: TOKEN });
  });
  afterAll(async () => {
    await api?.stop();
    api?.cleanup();
  });
  // A proxy per test: a kept-alive connection from an earlier test would dodge the cut.
  const connect = async (retry?: { attempts: number }) => {
    proxy = await startProxy({ host: '127.0.0.1', port: Number(new URL(api.url).port) });
    attempts = [];
    client = kind.connect({
      baseUrl: `http://127.0.0.1:${proxy.port}`,
      token: TOKEN,
      fetch: recordingFetch(attempts),
      ...(retry && { retry }),
    });
  };
  afterEach(async () => {
    await proxy?.close();
  });

  it('retries a create with the same key and resolves to the original answer, replayed', async () => {
    await connect();
    proxy.setMode('cut-answer');
    const answer = await client.create({ id: 9007199254740993n, name: 'Fern', tag: 'herb' });
    const key = attempts[0]?.key;
    expect(key).toMatch(SF_UUID);
    expect(attempts).toStrictEqual([
      { key, status: 0, replayed: null },
      { key, status: 200, replayed: 'true' },
    ]);
    const { etag: _, ...stored } = await direct.getPlant(9007199254740993n);
    expect(stored).toStrictEqual({
      id: 9007199254740993n,
      name: 'Fern',
      tag: 'herb',
      version: stored.version,
    });
    // The replayed answer is the original one: the body, and over REST the ETag, so the version too.
    expect(answer).toStrictEqual(
      kind.name === 'REST client'
        ? { name: 'Fern', tag: 'herb', version: stored.version, etag: `"${stored.version}"` }
        : { name: 'Fern', tag: 'herb' },
    );
    // Another create is another request: a new key.
    await client.create({ id: 2n, name: 'Rose' });
    expect(attempts[2]?.key).toMatch(SF_UUID);
    expect(attempts[2]?.key).not.toBe(key);
  });

  it('retries an update the same way, resolving to the plant as that update left it', async () => {
    await direct.createPlant({ id: 5n, name: 'Palm' });
    await connect();
    proxy.setMode('cut-answer');
    const updated = await client.update(5n, { tag: 'tropical' });
    const key = attempts[0]?.key;
    expect(key).toMatch(SF_UUID);
    expect(attempts).toStrictEqual([
      { key, status: 0, replayed: null },
      { key, status: 200, replayed: 'true' },
    ]);
    const { etag: _, ...stored } = await direct.getPlant(5n);
    expect(updated).toStrictEqual({ id: 5n, name: 'Palm', tag: 'tropical', version: stored.version });
  });

  it('retries a delete the same way: resolved, not 404', async () => {
    await direct.createPlant({ id: 3n, name: 'Ivy' });
    await connect();
    proxy.setMode('cut-answer');
    expect(await client.delete(3n)).toBeUndefined();
    const key = attempts[0]?.key;
    expect(attempts).toStrictEqual([
      { key, status: 0, replayed: null },
      { key, status: kind.name === 'REST client' ? 204 : 200, replayed: 'true' },
    ]);
    expect((await rejectionOf(direct.getPlant(3n))).status).toBe(404);
  });

  it('with retries off fails with status 0; the caller retrying with its own key gets the answer', async () => {
    await connect({ attempts: 1 });
    proxy.setMode('cut-answer');
    const key = crypto.randomUUID();
    expect((await rejectionOf(client.create({ id: 4n, name: 'Moss' }, key))).status).toBe(0);
    const again = await client.create({ id: 4n, name: 'Moss' }, key);
    const { version } = await direct.getPlant(4n);
    expect(again).toStrictEqual(
      kind.name === 'REST client' ? { name: 'Moss', version, etag: `"${version}"` } : { name: 'Moss' },
    );
    expect(attempts).toStrictEqual([
      { key: `"${key}"`, status: 0, replayed: null },
      { key: `"${key}"`, status: 200, replayed: 'true' },
    ]);
  });

  it('never retries a read, which carries no key', async () => {
    await connect();
    proxy.setMode('cut-answer');
    expect((await rejectionOf(client.list())).status).toBe(0);
    expect(attempts).toStrictEqual([{ key: null, status: 0, replayed: null }]);
  });
});
