import { describe, expect, it } from 'vitest';
import { apiOnStore } from './support/api-on-store.ts';
import type { RunningApi } from './support/in-process.ts';
import { errorBody, postPlant, send, TOKEN } from './support/http.ts';
import { EDGE_IDS } from './support/ids.ts';
import { type TestStoreInstance, testStores } from './support/stores.ts';

const AUTH = { authorization: `Bearer ${TOKEN}` };
const ID_MESSAGE =
  'Invalid request parameters: id must be an integer from -9223372036854775808 to 9223372036854775807.';

describe.each(testStores())('DELETE /plants/{id} on $name', (testStore) => {
  let store: TestStoreInstance;
  let api: RunningApi;

  apiOnStore(testStore, (running) => ({ api, store } = running));

  it('answers 204 with no body and removes exactly that plant, over the whole int64 range', async () => {
    for (const id of EDGE_IDS) expect((await postPlant(api.url, `{"id":${id},"name":"P"}`)).status).toBe(200);
    for (const id of [EDGE_IDS[0]!, EDGE_IDS[2]!, EDGE_IDS[3]!]) {
      const answer = await send(`${api.url}/plants/${id}`, { method: 'DELETE', headers: AUTH });
      expect(answer.status).toBe(204);
      expect(answer.text).toBe('');
      expect(answer.headers.get('content-type')).toBeNull();
    }
    expect(await store.ids()).toEqual([2n ** 53n]);
    expect((await send(`${api.url}/plants/${2n ** 53n + 1n}`, { headers: AUTH })).status).toBe(404);
  });

  it('answers 404 for a plant that is not there (or no longer)', async () => {
    expect((await postPlant(api.url, '{"id":77,"name":"P"}')).status).toBe(200);
    expect((await send(`${api.url}/plants/77`, { method: 'DELETE', headers: AUTH })).status).toBe(204);
    const again = await send(`${api.url}/plants/77`, { method: 'DELETE', headers: AUTH });
    expect(again.status).toBe(404);
    expect(again.text).toBe(errorBody(404, 'There is no plant with id 77.'));
  });

  it.each(['abc', '1.5', '9223372036854775808', '-9223372036854775809', ' 1'])(
    'answers 400 for id %s and deletes nothing',
    async (id) => {
      const before = await store.ids();
      const answer = await send(`${api.url}/plants/${encodeURIComponent(id)}`, {
        method: 'DELETE',
        headers: AUTH,
      });
      expect(answer.status).toBe(400);
      expect(answer.text).toBe(errorBody(400, ID_MESSAGE));
      expect(await store.ids()).toEqual(before);
    },
  );

  it('answers 401 without a token and deletes nothing', async () => {
    const before = await store.ids();
    const answer = await send(`${api.url}/plants/${2n ** 53n}`, { method: 'DELETE' });
    expect(answer.status).toBe(401);
    expect(answer.headers.get('www-authenticate')).toBe('Bearer');
    expect(await store.ids()).toEqual(before);
  });

  it('lets the id be created again afterwards', async () => {
    const old = await postPlant(api.url, '{"id":88,"name":"Old"}');
    expect(old.status).toBe(200);
    expect((await send(`${api.url}/plants/88`, { method: 'DELETE', headers: AUTH })).status).toBe(204);
    const created = await postPlant(api.url, '{"id":88,"name":"New"}');
    expect(created.status).toBe(200);
    // A new version, greater than the deleted plant's: an If-Match of the old one never matches.
    const version = created.headers.get('etag')!.slice(1, -1);
    expect(BigInt(version)).toBeGreaterThan(BigInt(old.headers.get('etag')!.slice(1, -1)));
    expect((await send(`${api.url}/plants/88`, { headers: AUTH })).text).toBe(
      `{"id":88,"name":"New","version":${version}}`,
    );
  });
});
