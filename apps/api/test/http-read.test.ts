import { parseJson } from '@plant-store/schema';
import { beforeAll, describe, expect, it } from 'vitest';
import { apiOnStore } from './support/api-on-store.ts';
import type { RunningApi } from './support/in-process.ts';
import { errorBody, postPlant, send, TOKEN } from './support/http.ts';
import { type TestStoreInstance, testStores } from './support/stores.ts';

const AUTH = { authorization: `Bearer ${TOKEN}` };
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const LIMIT_MESSAGE = 'Invalid request parameters: limit must be an integer from 1 to 1000.';
const ID_MESSAGE =
  'Invalid request parameters: id must be an integer from -9223372036854775808 to 9223372036854775807.';

describe.each(testStores())('reading plants on $name', (testStore) => {
  let store: TestStoreInstance;
  let api: RunningApi;
  const ids = [INT64_MIN, -5n, 0n, 7n, 2n ** 53n, 2n ** 53n + 1n, INT64_MAX];
  // 250 more plants so pages and the default limit have something to cut.
  const many = Array.from({ length: 250 }, (_, i) => 1000n + BigInt(i));
  const all = [...ids, ...many].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  // Created one at a time, in this order, into a fresh store: each version is its create's event id.
  const versions = new Map([...ids, ...many].map((id, i) => [id, BigInt(i + 1)]));

  apiOnStore(testStore, (running) => ({ api, store } = running));
  beforeAll(async () => {
    for (const id of [...ids, ...many]) {
      const tag = id === 7n ? ',"tag":"herb"' : '';
      expect((await postPlant(api.url, `{"id":${id},"name":"P${id}"${tag}}`)).status).toBe(200);
    }
  });

  describe('GET /plants', () => {
    it('answers the first 100 plants by id, exactly, with a Link to the next page', async () => {
      const answer = await send(`${api.url}/plants`, { headers: AUTH });
      expect(answer.status).toBe(200);
      expect(answer.headers.get('content-type')).toBe('application/json; charset=utf-8');
      const page = parseJson(answer.text) as { id: bigint; name: string; tag?: string }[];
      expect(page.map((plant) => plant.id)).toEqual(all.slice(0, 100));
      expect(page[0]).toEqual({ id: INT64_MIN, name: `P${INT64_MIN}`, version: versions.get(INT64_MIN) });
      expect(page.find((plant) => plant.id === 7n)).toEqual({ id: 7n, name: 'P7', tag: 'herb', version: 4n });
      expect(answer.headers.get('link')).toBe(`</plants?limit=100&after=${all[99]}>; rel="next"`);
    });

    it('follows Link headers through every page and ends without one', async () => {
      let next: string | null = '/plants?limit=40';
      const seen: bigint[] = [];
      let pages = 0;
      while (next !== null) {
        const answer = await send(`${api.url}${next}`, { headers: AUTH });
        expect(answer.status).toBe(200);
        seen.push(...(parseJson(answer.text) as { id: bigint }[]).map((plant) => plant.id));
        next = /^<([^>]+)>; rel="next"$/.exec(answer.headers.get('link') ?? '')?.[1] ?? null;
        pages++;
      }
      expect(seen).toEqual(all);
      expect(pages).toBe(Math.ceil(all.length / 40));
    });

    it('answers an empty list after the last id, with no Link', async () => {
      const answer = await send(`${api.url}/plants?after=${INT64_MAX}`, { headers: AUTH });
      expect(answer.status).toBe(200);
      expect(answer.text).toBe('[]');
      expect(answer.headers.get('link')).toBeNull();
    });

    it('pages exactly around 2^53', async () => {
      const answer = await send(`${api.url}/plants?limit=1&after=${2n ** 53n}`, { headers: AUTH });
      expect(answer.text).toBe(`[{"id":${2n ** 53n + 1n},"name":"P${2n ** 53n + 1n}","version":6}]`);
    });

    it.each(['0', '-1', '1001', 'abc', '1.5', '', '2147483648'])(
      'answers 400 for limit=%s',
      async (limit) => {
        const answer = await send(`${api.url}/plants?limit=${limit}`, { headers: AUTH });
        expect(answer.status).toBe(400);
        expect(answer.text).toBe(errorBody(400, LIMIT_MESSAGE));
      },
    );

    it('answers 400 for a repeated limit and for an after that is not an int64', async () => {
      expect((await send(`${api.url}/plants?limit=1&limit=2`, { headers: AUTH })).text).toBe(
        errorBody(400, LIMIT_MESSAGE),
      );
      const after = await send(`${api.url}/plants?after=9223372036854775808`, { headers: AUTH });
      expect(after.text).toBe(
        errorBody(
          400,
          'Invalid request parameters: after must be an integer from -9223372036854775808 to 9223372036854775807.',
        ),
      );
    });

    it('answers 401 without a token', async () => {
      const answer = await send(`${api.url}/plants`);
      expect(answer.status).toBe(401);
      expect(answer.headers.get('www-authenticate')).toBe('Bearer');
    });
  });

  describe('GET /plants/{id}', () => {
    it.each([INT64_MIN, 2n ** 53n, 2n ** 53n + 1n, INT64_MAX])('answers plant %s exactly', async (id) => {
      const answer = await send(`${api.url}/plants/${id}`, { headers: AUTH });
      expect(answer.status).toBe(200);
      expect(answer.text).toBe(`{"id":${id},"name":"P${id}","version":${versions.get(id)}}`);
      expect(answer.headers.get('etag')).toBe(`"${versions.get(id)}"`);
    });

    it('answers 404 for an id nobody created', async () => {
      const answer = await send(`${api.url}/plants/8`, { headers: AUTH });
      expect(answer.status).toBe(404);
      expect(answer.text).toBe(errorBody(404, 'There is no plant with id 8.'));
    });

    it.each(['abc', '1.5', '9223372036854775808', '-9223372036854775809', '0x10', '%20'])(
      'answers 400 for id %s',
      async (id) => {
        const answer = await send(`${api.url}/plants/${id}`, { headers: AUTH });
        expect(answer.status).toBe(400);
        expect(answer.text).toBe(errorBody(400, ID_MESSAGE));
      },
    );

    it('answers 401 without a token', async () => {
      expect((await send(`${api.url}/plants/7`)).status).toBe(401);
    });
  });
});
