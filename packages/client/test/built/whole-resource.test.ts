import { apiProcessPerFile } from '@plant-store/api/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  allPlants,
  createRestClient,
  createTrpcClient,
  isPreconditionFailed,
  type PlantWithId,
  type RestClient,
  type TrpcClient,
} from '../../src/index.ts';
import { failureOf, rejectionOf } from '../support/clients.ts';
import { collect } from '../support/events.ts';
import { sendJson, startFakeServer } from '../support/fake-server.ts';
import { type Receiver, startReceiver } from '../support/receiver.ts';

const TOKEN = 'whole-resource-token-0123456789';
const BIG = 9007199254740993n;

// Loopback receivers need WEBHOOK_ALLOW_PRIVATE_URLS; a short poll interval keeps the test quick.
const api = apiProcessPerFile({
  token: TOKEN,
  env: { WEBHOOK_ALLOW_PRIVATE_URLS: '1', WEBHOOK_POLL_INTERVAL_MS: '100' },
});

/** The server's answer to a change whose expected version is not the plant's. */
const stale = (id: bigint, version: bigint) =>
  `Plant ${id} is at version ${version}, not the one this request expected; read it again and retry. Nothing was changed.`;

let rest: RestClient;
let trpc: TrpcClient;
beforeAll(() => {
  rest = createRestClient({ baseUrl: api.url, token: TOKEN });
  trpc = createTrpcClient({ baseUrl: api.url, token: TOKEN });
});

/** Every plant the store holds, read back through the api. */
async function stored(): Promise<PlantWithId[]> {
  const plants: PlantWithId[] = [];
  for await (const plant of rest.allPlants()) plants.push(plant);
  return plants;
}

describe('REST client: versions, conditional changes and filters', () => {
  it('createPlant resolves to the Plant with the version and ETag of its header', async () => {
    expect(await rest.createPlant({ id: 1n, name: 'Fern', tag: 'green' })).toStrictEqual({
      name: 'Fern',
      tag: 'green',
      version: 1n,
      etag: '"1"',
    });
    expect(await rest.createPlant({ id: 2n, name: 'Fern Boston', tag: 'green' })).toMatchObject({
      version: 2n,
    });
    expect(await rest.createPlant({ id: 3n, name: 'Rose', tag: 'red' })).toMatchObject({ version: 3n });
    expect(await rest.createPlant({ id: BIG, name: 'Ferocactus' })).toStrictEqual({
      name: 'Ferocactus',
      version: 4n,
      etag: '"4"',
    });
  });

  it('getPlant answers the version and ETag; ifNoneMatch tells "not modified" apart', async () => {
    expect(await rest.getPlant(1n)).toStrictEqual({
      id: 1n,
      name: 'Fern',
      tag: 'green',
      version: 1n,
      etag: '"1"',
    });
    expect(await rest.getPlant(1n, { ifNoneMatch: '"1"' })).toStrictEqual({ notModified: true, etag: '"1"' });
    expect(await rest.getPlant(1n, { ifNoneMatch: '*' })).toStrictEqual({ notModified: true, etag: '"1"' });
    expect(await rest.getPlant(1n, { ifNoneMatch: '"0"' })).toStrictEqual({
      id: 1n,
      name: 'Fern',
      tag: 'green',
      version: 1n,
      etag: '"1"',
    });
  });

  it('updatePlant merges the patch, gives a new version, and keeps it for a patch that changes nothing', async () => {
    expect(await rest.updatePlant(1n, { name: 'Sword fern' }, { ifMatch: '"1"' })).toStrictEqual({
      id: 1n,
      name: 'Sword fern',
      tag: 'green',
      version: 5n,
      etag: '"5"',
    });
    expect(await rest.updatePlant(1n, { tag: null }, { expectedVersion: 5n })).toStrictEqual({
      id: 1n,
      name: 'Sword fern',
      version: 6n,
      etag: '"6"',
    });
    const unchanged = { id: 1n, name: 'Sword fern', version: 6n, etag: '"6"' };
    expect(await rest.updatePlant(1n, {})).toStrictEqual(unchanged);
    expect(await rest.updatePlant(1n, { name: 'Sword fern' }, { ifMatch: '*' })).toStrictEqual(unchanged);
    expect(await rest.getPlant(1n)).toStrictEqual(unchanged);
  });

  it('refuses a change on a stale version with a 412 PlantStoreError, and changes nothing', async () => {
    const refused = await rejectionOf(rest.updatePlant(1n, { name: 'Lost' }, { ifMatch: '"5"' }));
    expect(isPreconditionFailed(refused)).toBe(true);
    expect(await failureOf(Promise.reject(refused))).toStrictEqual({
      name: 'PlantStoreError',
      status: 412,
      error: 412,
      serverMessage: stale(1n, 6n),
      method: 'PATCH',
      url: `${api.url}/plants/1`,
      message: `[PATCH] ${api.url}/plants/1: 412 ${stale(1n, 6n)}`,
    });
    expect(await failureOf(rest.deletePlant(3n, { expectedVersion: 1n }))).toMatchObject({
      status: 412,
      serverMessage: stale(3n, 3n),
      method: 'DELETE',
    });
    expect(await stored()).toStrictEqual([
      { id: 1n, name: 'Sword fern', version: 6n },
      { id: 2n, name: 'Fern Boston', tag: 'green', version: 2n },
      { id: 3n, name: 'Rose', tag: 'red', version: 3n },
      { id: BIG, name: 'Ferocactus', version: 4n },
    ]);
    expect(isPreconditionFailed(await rejectionOf(rest.getPlant(404n)))).toBe(false);
  });

  it('answers 404 and 400 for updates as for other calls', async () => {
    expect(await failureOf(rest.updatePlant(404n, { name: 'Nobody' }))).toMatchObject({
      status: 404,
      serverMessage: 'There is no plant with id 404.',
      method: 'PATCH',
    });
    expect(await failureOf(rest.updatePlant(2n, { name: 'x'.repeat(201) }))).toMatchObject({
      status: 400,
      serverMessage: expect.stringContaining('name must be at most 200 characters'),
    });
    expect(await rest.getPlant(2n)).toMatchObject({ name: 'Fern Boston', version: 2n });
  });

  it('deletes a plant whose version matches', async () => {
    expect(await rest.deletePlant(3n, { ifMatch: '"3"' })).toBeUndefined();
    expect((await stored()).map(({ id }) => id)).toStrictEqual([1n, 2n, BIG]);
  });

  it('lists by tag and name prefix, page after page with the filters kept', async () => {
    expect(await rest.listPlants({ tag: 'green' })).toStrictEqual({
      plants: [{ id: 2n, name: 'Fern Boston', tag: 'green', version: 2n }],
      next: undefined,
    });
    const first = await rest.listPlants({ name_prefix: 'Fer', limit: 1 });
    expect(first).toStrictEqual({
      plants: [{ id: 2n, name: 'Fern Boston', tag: 'green', version: 2n }],
      next: 2n,
    });
    expect(await rest.listPlants({ name_prefix: 'Fer', limit: 1, after: first.next })).toStrictEqual({
      plants: [{ id: BIG, name: 'Ferocactus', version: 4n }],
      next: undefined,
    });
    expect(await rest.listPlants({ name_prefix: 'fer' })).toStrictEqual({ plants: [], next: undefined });
    const all: PlantWithId[] = [];
    for await (const plant of rest.allPlants({ name_prefix: 'Fer', limit: 1 })) all.push(plant);
    expect(all.map(({ id }) => id)).toStrictEqual([2n, BIG]);
    const tagged: bigint[] = [];
    for await (const plant of rest.allPlants({ tag: 'green', name_prefix: 'S' })) tagged.push(plant.id);
    expect(tagged).toStrictEqual([]);
  });

  it('streams plant.updated events with what changed', async () => {
    const stop = new AbortController();
    const events = collect(rest.events({ after: 0n, types: ['plant.updated'], signal: stop.signal }), () =>
      stop.abort(),
    );
    const [nameChange, tagChange] = await events.until(2);
    await events.stop();
    expect(nameChange).toStrictEqual({
      id: 5n,
      type: 'plant.updated',
      createdAt: expect.any(String),
      plant: { id: 1n, name: 'Sword fern', tag: 'green', version: 5n },
      changed: ['name'],
    });
    expect(tagChange).toMatchObject({
      id: 6n,
      plant: { id: 1n, name: 'Sword fern', version: 6n },
      changed: ['tag'],
    });
  });
});

describe('tRPC client: versions and conditional changes', () => {
  it('plants.update takes expectedVersion; a stale one is a 412 PlantStoreError with the same message', async () => {
    const { version } = await trpc.plants.get.query({ id: 2n });
    expect(version).toBe(2n);
    const updated = await trpc.plants.update.mutate({ id: 2n, tag: null, expectedVersion: version });
    expect(updated).toStrictEqual({ id: 2n, name: 'Fern Boston', version: updated.version });
    expect(updated.version).toBeGreaterThan(6n);
    const refused = await rejectionOf(
      trpc.plants.update.mutate({ id: 2n, name: 'Lost', expectedVersion: version }),
    );
    expect(isPreconditionFailed(refused)).toBe(true);
    expect({ status: refused.status, serverMessage: refused.serverMessage, url: refused.url }).toStrictEqual({
      status: 412,
      serverMessage: stale(2n, updated.version),
      url: `${api.url}/trpc/plants.update`,
    });
    expect(await failureOf(trpc.plants.delete.mutate({ id: 2n, expectedVersion: version }))).toMatchObject({
      status: 412,
      serverMessage: stale(2n, updated.version),
    });
    expect(await trpc.plants.get.query({ id: 2n })).toStrictEqual(updated);
  });

  it('plants.list filters; allPlants follows the cursor with the filters kept', async () => {
    expect(await trpc.plants.list.query({ name_prefix: 'Fer', limit: 1 })).toStrictEqual({
      plants: [{ id: 2n, name: 'Fern Boston', version: expect.any(BigInt) }],
      next: 2n,
    });
    const ids: bigint[] = [];
    for await (const plant of allPlants(trpc, { name_prefix: 'Fer', limit: 1 })) ids.push(plant.id);
    expect(ids).toStrictEqual([2n, BIG]);
    const none: bigint[] = [];
    for await (const plant of allPlants(trpc, { tag: 'green' })) none.push(plant.id);
    expect(none).toStrictEqual([]);
  });

  it('deletes with the current version', async () => {
    const { version } = await trpc.plants.get.query({ id: BIG });
    await trpc.plants.delete.mutate({ id: BIG, expectedVersion: version });
    expect((await stored()).map(({ id }) => id)).toStrictEqual([1n, 2n]);
  });
});

describe('both clients: webhook endpoint events', () => {
  let receiver: Receiver;
  beforeAll(async () => {
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await receiver?.close();
  });

  it('registers with events, changes them with update, and the endpoint gets only those', async () => {
    const url = `${receiver.url}/hooks/updates`;
    const created = await rest.endpoints.create({ url, events: ['plant.updated', 'plant.deleted'] });
    expect(created.events).toStrictEqual(['plant.updated', 'plant.deleted']);
    const { secret: _, ...endpoint } = created;
    expect(
      await rest.endpoints.update(endpoint.id, { events: ['plant.updated'], description: 'updates' }),
    ).toStrictEqual({ ...endpoint, events: ['plant.updated'], description: 'updates' });
    expect(await trpc.webhookEndpoints.update.mutate({ id: endpoint.id, description: null })).toStrictEqual({
      ...endpoint,
      events: ['plant.updated'],
      description: null,
    });
    expect(await rest.endpoints.get(endpoint.id)).toStrictEqual({ ...endpoint, events: ['plant.updated'] });
    expect((await trpc.webhookEndpoints.create.mutate({ url: `${url}/default` })).events).toStrictEqual([
      'plant.created',
    ]);

    // The create goes to the endpoint that kept the default, the update to the one that chose it.
    await rest.createPlant({ id: 50n, name: 'Sent once' });
    await rest.updatePlant(50n, { tag: 'sent' });
    const delivered = (await receiver.until(2)).map(({ path, headers }) => [path, headers['webhook-event']]);
    expect(delivered.sort()).toStrictEqual([
      ['/hooks/updates', 'plant.updated'],
      ['/hooks/updates/default', 'plant.created'],
    ]);
  });
});

describe('REST client: what goes on the wire', () => {
  it('sends a merge patch with If-Match and a key, If-None-Match, and the filters as query parameters', async () => {
    const plant = { id: 7, name: 'Fern', version: 9 };
    const server = await startFakeServer((res, { method }, index) => {
      if (index === 1) {
        res.writeHead(304, { etag: '"9"' });
        res.end();
        return;
      }
      sendJson(res, 200, method === 'PATCH' || index === 2 ? plant : [plant], { etag: '"9"' });
    });
    try {
      const client = createRestClient({ baseUrl: server.url, token: TOKEN });
      await client.updatePlant(7n, { tag: null }, { expectedVersion: 8n });
      expect(await client.getPlant(7n, { ifNoneMatch: '"9"' })).toStrictEqual({
        notModified: true,
        etag: '"9"',
      });
      expect(await client.getPlant(7n)).toStrictEqual({ id: 7n, name: 'Fern', version: 9n, etag: '"9"' });
      await client.listPlants({ tag: 'a b&c', name_prefix: 'Fé' });
      const [patch, conditional, , list] = server.requests;
      expect(patch).toMatchObject({
        method: 'PATCH',
        url: '/plants/7',
        body: '{"tag":null}',
        headers: {
          'content-type': 'application/merge-patch+json',
          'if-match': '"8"',
          'idempotency-key': expect.stringMatching(/^"[0-9a-f-]{36}"$/),
        },
      });
      expect(conditional!.headers['if-none-match']).toBe('"9"');
      expect(list!.url).toBe('/plants?tag=a+b%26c&name_prefix=F%C3%A9');
    } finally {
      await server.close();
    }
  });

  it('fails a create whose ETag is no version, as any answer not as the API describes; none is a replay', async () => {
    const server = await startFakeServer((res, _seen, index) =>
      sendJson(
        res,
        200,
        { name: 'Fern' },
        index === 0 ? { 'idempotent-replayed': 'true' } : { etag: 'W/"1"' },
      ),
    );
    try {
      const client = createRestClient({ baseUrl: server.url, token: TOKEN, retry: { attempts: 1 } });
      expect(await client.createPlant({ id: 1n, name: 'Fern' })).toStrictEqual({ name: 'Fern' });
      expect(await failureOf(client.createPlant({ id: 1n, name: 'Fern' }))).toMatchObject({
        status: 200,
        message: `[POST] ${server.url}/plants: 200 its ETag (W/"1") is not a plant version`,
      });
    } finally {
      await server.close();
    }
  });
});
