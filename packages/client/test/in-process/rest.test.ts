import { type RunningApi, startInProcess } from '@plant-store/api/testing/in-process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRestClient, type RestClient } from '../../src/index.ts';
import { failureOf } from '../support/clients.ts';

const TOKEN = 'rest-test-token-0123456789';
const INT64_MAX = 9223372036854775807n;

let api: RunningApi;
let rest: RestClient;
beforeAll(async () => {
  api = await startInProcess({ token: TOKEN });
  rest = createRestClient({ baseUrl: api.url, token: TOKEN });
  for (const id of [3n, 1n, INT64_MAX, 9007199254740993n, 9007199254740992n]) {
    await rest.createPlant({ id, name: `Plant ${id}`, ...(id === 1n && { tag: 'first' }) });
  }
});
afterAll(async () => {
  await api?.stop();
  api?.cleanup();
});

describe('REST client: listPlants', () => {
  it('reads pages in id order and exposes the next cursor from the Link header', async () => {
    const first = await rest.listPlants({ limit: 2 });
    expect(first).toStrictEqual({
      plants: [
        { id: 1n, name: 'Plant 1', tag: 'first', version: 2n },
        { id: 3n, name: 'Plant 3', version: 1n },
      ],
      next: 3n,
    });
    const second = await rest.listPlants({ limit: 2, after: first.next });
    expect(second).toStrictEqual({
      plants: [
        { id: 9007199254740992n, name: 'Plant 9007199254740992', version: 5n },
        { id: 9007199254740993n, name: 'Plant 9007199254740993', version: 4n },
      ],
      next: 9007199254740993n,
    });
    expect(await rest.listPlants({ limit: 2, after: second.next })).toStrictEqual({
      plants: [{ id: INT64_MAX, name: `Plant ${INT64_MAX}`, version: 3n }],
      next: undefined,
    });
  });

  it('uses the server default limit without a query', async () => {
    const page = await rest.listPlants();
    expect(page.plants.map(({ id }) => id)).toStrictEqual([
      1n,
      3n,
      9007199254740992n,
      9007199254740993n,
      INT64_MAX,
    ]);
    expect(page.next).toBeUndefined();
  });

  it('rejects a bad limit with the server message', async () => {
    expect(await failureOf(rest.listPlants({ limit: 0 }))).toMatchObject({
      status: 400,
      serverMessage: 'Invalid request parameters: limit must be an integer from 1 to 1000.',
      method: 'GET',
      url: `${api.url}/plants?limit=0`,
    });
  });
});

describe('REST client: getPlant and deletePlant', () => {
  it('reads a plant by its exact id', async () => {
    expect(await rest.getPlant(9007199254740993n)).toStrictEqual({
      id: 9007199254740993n,
      name: 'Plant 9007199254740993',
      version: 4n,
      etag: '"4"',
    });
  });

  it('deletes a plant (204, resolves undefined); then get and delete fail with 404', async () => {
    await rest.createPlant({ id: -5n, name: 'Short-lived' });
    expect(await rest.deletePlant(-5n)).toBeUndefined();
    const gone = { status: 404, error: 404, serverMessage: 'There is no plant with id -5.' };
    expect(await failureOf(rest.getPlant(-5n))).toMatchObject({ ...gone, method: 'GET' });
    expect(await failureOf(rest.deletePlant(-5n))).toMatchObject({
      ...gone,
      method: 'DELETE',
      url: `${api.url}/plants/-5`,
      message: `[DELETE] ${api.url}/plants/-5: 404 There is no plant with id -5.`,
    });
  });
});
