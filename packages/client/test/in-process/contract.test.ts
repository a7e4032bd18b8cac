import { type RunningApi, startInProcess } from '@plant-store/api/testing/in-process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  clientsUnderTest,
  closedPort,
  failureOf,
  fetchWithoutAuthorization,
  rejectionOf,
} from '../support/clients.ts';

const TOKEN = 'client-test-token-0123456789';
const INT64_MIN = -9223372036854775808n;
const INT64_MAX = 9223372036854775807n;

describe.each(clientsUnderTest)('$name against a running api', (client) => {
  let api: RunningApi;
  let create: ReturnType<typeof client.connect>;
  let url: string;

  beforeAll(async () => {
    api = await startInProcess({ token: TOKEN });
    create = client.connect({ baseUrl: api.url, token: TOKEN });
    url = client.createUrl(api.url);
  });
  afterAll(async () => {
    await api?.stop();
    api?.cleanup();
  });

  it('answers exactly the Plant, without tag when none was sent', async () => {
    expect(await create({ id: 1n, name: 'Fern' })).toStrictEqual({ name: 'Fern' });
    expect(await create({ id: 2n, name: 'Rose', tag: 'flower' })).toStrictEqual({
      name: 'Rose',
      tag: 'flower',
    });
  });

  it('rejects a duplicate id with a 409 PlantStoreError carrying the server message', async () => {
    await create({ id: 10n, name: 'Ivy' });
    expect(await failureOf(create({ id: 10n, name: 'Ivy again' }))).toStrictEqual({
      name: 'PlantStoreError',
      status: 409,
      error: 409,
      serverMessage: 'A plant with id 10 already exists.',
      method: 'POST',
      url,
      message: `[POST] ${url}: 409 A plant with id 10 already exists.`,
    });
  });

  it('rejects a wrong token with 401', async () => {
    const wrong = client.connect({ baseUrl: api.url, token: 'not-the-token' });
    expect(await failureOf(wrong({ id: 20n, name: 'Moss' }))).toMatchObject({
      status: 401,
      error: 401,
      serverMessage: 'The bearer token is not valid.',
    });
  });

  it('rejects an empty token with 401', async () => {
    const empty = client.connect({ baseUrl: api.url, token: '' });
    expect(await failureOf(empty({ id: 21n, name: 'Moss' }))).toMatchObject({
      status: 401,
      serverMessage: 'The bearer token is not valid.',
    });
  });

  it('rejects a request without Authorization header with 401', async () => {
    const bare = client.connect({ baseUrl: api.url, token: TOKEN, fetch: fetchWithoutAuthorization });
    expect(await failureOf(bare({ id: 22n, name: 'Moss' }))).toMatchObject({
      status: 401,
      error: 401,
      serverMessage: 'Missing bearer token: send it as "Authorization: Bearer <token>".',
    });
    // Nothing was stored by the refused calls: the id is still free.
    expect(await create({ id: 22n, name: 'Moss' })).toStrictEqual({ name: 'Moss' });
  });

  it('keeps 2^53 + 1 and 2^53 apart', async () => {
    expect(await create({ id: 9007199254740993n, name: 'Odd' })).toStrictEqual({ name: 'Odd' });
    expect(await create({ id: 9007199254740992n, name: 'Even' })).toStrictEqual({ name: 'Even' });
    expect(await failureOf(create({ id: 9007199254740993n, name: 'Odd' }))).toMatchObject({
      status: 409,
      serverMessage: 'A plant with id 9007199254740993 already exists.',
    });
    expect(await failureOf(create({ id: 9007199254740992n, name: 'Even' }))).toMatchObject({
      status: 409,
      serverMessage: 'A plant with id 9007199254740992 already exists.',
    });
  });

  it('accepts the smallest and largest int64 ids exactly', async () => {
    expect(await create({ id: INT64_MIN, name: 'Min', tag: 'edge' })).toStrictEqual({
      name: 'Min',
      tag: 'edge',
    });
    expect(await create({ id: INT64_MAX, name: 'Max' })).toStrictEqual({ name: 'Max' });
    expect(await failureOf(create({ id: INT64_MIN, name: 'Min' }))).toMatchObject({
      status: 409,
      serverMessage: 'A plant with id -9223372036854775808 already exists.',
    });
    expect(await failureOf(create({ id: INT64_MAX, name: 'Max' }))).toMatchObject({
      status: 409,
      serverMessage: 'A plant with id 9223372036854775807 already exists.',
    });
  });

  it('rejects an id just past int64 with 400', async () => {
    expect(await failureOf(create({ id: INT64_MAX + 1n, name: 'Too big' }))).toMatchObject({
      status: 400,
      error: 400,
      serverMessage: expect.stringMatching(
        /id must be an integer from -9223372036854775808 to 9223372036854775807/i,
      ),
    });
  });

  it('fails with status 0 and the network error as cause when nothing listens', async () => {
    const baseUrl = `http://127.0.0.1:${await closedPort()}`;
    const failed = client.connect({ baseUrl, token: TOKEN })({ id: 30n, name: 'Nowhere' });
    const error = await rejectionOf(failed);
    expect(error.cause).toBeInstanceOf(Error);
    expect({ status: error.status, error: error.error, serverMessage: error.serverMessage }).toStrictEqual({
      status: 0,
      error: undefined,
      serverMessage: undefined,
    });
    expect(error.url).toBe(client.createUrl(baseUrl));
    expect(error.message).toMatch(
      /^\[POST\] \S+: no response \(fetch failed: connect ECONNREFUSED 127\.0\.0\.1:\d+\)$/,
    );
  });
});
