import { describe, expect, it } from 'vitest';
import { apiOnStore } from '../support/api-on-store.ts';
import type { RunningApi } from '../support/in-process.ts';
import { errorBody, JSON_HEADERS, postPlant, send, TOKEN } from '../support/http.ts';
import { type TestStoreInstance, testStores } from '../support/stores.ts';

const AUTH = { authorization: `Bearer ${TOKEN}` };
const MERGE_PATCH = { ...AUTH, 'content-type': 'application/merge-patch+json' };

/** The version an answer's ETag names. */
function versionOf(answer: { headers: Headers }): bigint {
  const etag = answer.headers.get('etag');
  expect(etag).toMatch(/^"[0-9]+"$/);
  return BigInt(etag!.slice(1, -1));
}

const stale = (id: bigint | number, version: bigint) =>
  errorBody(
    412,
    `Plant ${id} is at version ${version}, not the one this request expected; read it again and retry. Nothing was changed.`,
  );

describe.each(testStores())('PATCH /plants/{id} on $name', (testStore) => {
  let store: TestStoreInstance;
  let api: RunningApi;

  apiOnStore(testStore, (running) => ({ api, store } = running));

  const patch = (id: bigint | number | string, body: string, headers: Record<string, string> = MERGE_PATCH) =>
    send(`${api.url}/plants/${id}`, { method: 'PATCH', headers, body });
  const get = (id: bigint | number, headers: Record<string, string> = AUTH) =>
    send(`${api.url}/plants/${id}`, { headers });
  /** Creates a plant and answers its version (the create's ETag). */
  async function create(body: string): Promise<bigint> {
    const created = await postPlant(api.url, body);
    expect(created.status).toBe(200);
    return versionOf(created);
  }
  const events = async (id: number) =>
    (
      await store.rows(
        `SELECT id, type, name, tag, changed FROM plant_events WHERE plant_id = ${id} ORDER BY id`,
      )
    ).map((row) => ({ ...row, id: BigInt(row.id as bigint) }));

  it('renames a plant: 200 with the plant, a new version as ETag, and a plant.updated event naming name', async () => {
    const created = await create('{"id":1,"name":"Fern","tag":"green"}');
    const answer = await patch(1, '{"name":"Big Fern"}');
    expect(answer.status).toBe(200);
    const version = versionOf(answer);
    expect(version).toBeGreaterThan(created);
    expect(answer.text).toBe(`{"id":1,"name":"Big Fern","tag":"green","version":${version}}`);
    expect(answer.headers.get('content-type')).toBe('application/json; charset=utf-8');
    const read = await get(1);
    expect(read.text).toBe(answer.text);
    expect(read.headers.get('etag')).toBe(`"${version}"`);
    expect(await events(1)).toEqual([
      { id: created, type: 'plant.created', name: 'Fern', tag: 'green', changed: null },
      { id: version, type: 'plant.updated', name: 'Big Fern', tag: 'green', changed: 'name' },
    ]);
  });

  it('removes the tag with tag: null, sent as application/json too', async () => {
    await create('{"id":2,"name":"Ivy","tag":"climber"}');
    const answer = await patch(2, '{"tag":null}', JSON_HEADERS);
    expect(answer.status).toBe(200);
    const version = versionOf(answer);
    expect(answer.text).toBe(`{"id":2,"name":"Ivy","version":${version}}`);
    expect((await events(2)).at(-1)).toEqual({
      id: version,
      type: 'plant.updated',
      name: 'Ivy',
      tag: null,
      changed: 'tag',
    });
  });

  it('changes both fields at once, and names both in the event, name first', async () => {
    await create('{"id":3,"name":"A"}');
    const answer = await patch(3, '{"tag":"t","name":"B","id":3}');
    expect(answer.status).toBe(200);
    expect(answer.text).toBe(`{"id":3,"name":"B","tag":"t","version":${versionOf(answer)}}`);
    expect((await events(3)).at(-1)).toMatchObject({ type: 'plant.updated', changed: 'name,tag' });
  });

  it.each(['{}', '{"name":"Same","tag":"x"}', '{"id":4,"name":"Same"}'])(
    'answers %s, which changes nothing, 200 with the same version and no event',
    async (body) => {
      const created =
        (await send(`${api.url}/plants/4`, { headers: AUTH })).status === 404
          ? await create('{"id":4,"name":"Same","tag":"x"}')
          : versionOf(await get(4));
      const before = await events(4);
      const answer = await patch(4, body);
      expect(answer.status).toBe(200);
      expect(answer.text).toBe(`{"id":4,"name":"Same","tag":"x","version":${created}}`);
      expect(answer.headers.get('etag')).toBe(`"${created}"`);
      expect(await events(4)).toEqual(before);
    },
  );

  it.each([
    ['{"name":null}', 'Invalid request body: name must be a string.'],
    ['{"name":5}', 'Invalid request body: name must be a string.'],
    ['{"tag":5}', 'Invalid request body: tag must be a string or null.'],
    [`{"name":"${'x'.repeat(201)}"}`, 'Invalid request body: name must be at most 200 characters.'],
    ['{"id":6}', "Invalid request body: id must be the path's (5) when sent."],
    [
      '{"id":"5"}',
      'Invalid request body: id must be an integer from -9223372036854775808 to 9223372036854775807.',
    ],
    ['[]', 'The request body must be a JSON object.'],
    ['{"name":', 'The request body is not valid JSON.'],
    ['', 'The request body is required.'],
  ])('answers %s 400 and changes nothing', async (body, message) => {
    if ((await get(5)).status === 404) await create('{"id":5,"name":"Keep","tag":"k"}');
    const before = await get(5);
    const answer = await patch(5, body);
    expect(answer.status).toBe(400);
    expect(answer.text).toBe(errorBody(400, message));
    expect((await get(5)).text).toBe(before.text);
  });

  it('answers 404 for an unknown id, and creates nothing', async () => {
    const answer = await patch(999, '{"name":"Ghost"}');
    expect(answer.status).toBe(404);
    expect(answer.text).toBe(errorBody(404, 'There is no plant with id 999.'));
    expect(await store.ids()).not.toContain(999n);
  });

  it('answers 415 for another media type, 413 for a body past the limit', async () => {
    await create('{"id":7,"name":"Moss"}');
    const text = await patch(7, '{"name":"X"}', { ...AUTH, 'content-type': 'text/plain' });
    expect(text.status).toBe(415);
    expect(text.text).toBe(
      errorBody(
        415,
        'The request body must be JSON, sent with "Content-Type: application/merge-patch+json" or "Content-Type: application/json".',
      ),
    );
    const large = await patch(7, `{"name":"${'x'.repeat(70_000)}"}`);
    expect(large.status).toBe(413);
    expect(large.text).toBe(errorBody(413, 'The request body is larger than 65536 bytes.'));
    expect((await get(7)).json).toMatchObject({ name: 'Moss' });
  });

  it('answers 401 without a token and 403 for a read-only token, changing nothing', async () => {
    await create('{"id":8,"name":"Cactus"}');
    const answer = await patch(8, '{"name":"X"}', { 'content-type': 'application/json' });
    expect(answer.status).toBe(401);
    expect((await get(8)).json).toMatchObject({ name: 'Cactus' });
  });

  describe('If-Match', () => {
    it('changes the plant only while the ETag is current: 412 with nothing changed otherwise', async () => {
      const v1 = await create('{"id":20,"name":"One"}');
      const ok = await patch(20, '{"name":"Two"}', { ...MERGE_PATCH, 'if-match': `"${v1}"` });
      expect(ok.status).toBe(200);
      const v2 = versionOf(ok);
      const late = await patch(20, '{"name":"Three"}', { ...MERGE_PATCH, 'if-match': `"${v1}"` });
      expect(late.status).toBe(412);
      expect(late.text).toBe(stale(20, v2));
      expect(late.headers.get('etag')).toBeNull();
      expect((await get(20)).text).toBe(`{"id":20,"name":"Two","version":${v2}}`);
      expect((await events(20)).length).toBe(2);
    });

    it('takes a list, *, and never a weak tag', async () => {
      const v1 = await create('{"id":21,"name":"A"}');
      const list = await patch(21, '{"name":"B"}', { ...MERGE_PATCH, 'if-match': `"1", "${v1}"` });
      expect(list.status).toBe(200);
      const v2 = versionOf(list);
      const any = await patch(21, '{"name":"C"}', { ...MERGE_PATCH, 'if-match': '*' });
      expect(any.status).toBe(200);
      const v3 = versionOf(any);
      const weak = await patch(21, '{"name":"D"}', { ...MERGE_PATCH, 'if-match': `W/"${v3}"` });
      expect(weak.status).toBe(412);
      expect(weak.text).toBe(stale(21, v3));
      const junk = await patch(21, '{"name":"D"}', { ...MERGE_PATCH, 'if-match': `${v3}` });
      expect(junk.status).toBe(412);
      expect(v3).toBeGreaterThan(v2);
      expect((await get(21)).json).toMatchObject({ name: 'C' });
    });

    it('answers 404 for an unknown id, whatever it names', async () => {
      for (const ifMatch of ['*', '"1"']) {
        const answer = await patch(22_000, '{"name":"X"}', { ...MERGE_PATCH, 'if-match': ifMatch });
        expect(answer.status).toBe(404);
        expect(answer.text).toBe(errorBody(404, 'There is no plant with id 22000.'));
      }
    });

    it('guards DELETE too: 412 keeps the plant, the current tag deletes it', async () => {
      const v1 = await create('{"id":23,"name":"Gone soon"}');
      const wrong = await send(`${api.url}/plants/23`, {
        method: 'DELETE',
        headers: { ...AUTH, 'if-match': `"${v1 + 1000n}"` },
      });
      expect(wrong.status).toBe(412);
      expect(wrong.text).toBe(stale(23, v1));
      expect(await store.ids()).toContain(23n);
      const right = await send(`${api.url}/plants/23`, {
        method: 'DELETE',
        headers: { ...AUTH, 'if-match': `"${v1}"` },
      });
      expect(right.status).toBe(204);
      expect(await store.ids()).not.toContain(23n);
      const missing = await send(`${api.url}/plants/23`, {
        method: 'DELETE',
        headers: { ...AUTH, 'if-match': '*' },
      });
      expect(missing.status).toBe(404);
    });
  });

  describe('If-None-Match on GET', () => {
    it('answers 304 with no body and the ETag while the plant is unchanged, 200 once it changed', async () => {
      const v1 = await create('{"id":30,"name":"Palm"}');
      for (const ifNoneMatch of [`"${v1}"`, `W/"${v1}"`, `"1", "${v1}"`, '*']) {
        const cached = await get(30, { ...AUTH, 'if-none-match': ifNoneMatch });
        expect(cached.status).toBe(304);
        expect(cached.text).toBe('');
        expect(cached.headers.get('etag')).toBe(`"${v1}"`);
      }
      await patch(30, '{"tag":"tall"}');
      const fresh = await get(30, { ...AUTH, 'if-none-match': `"${v1}"` });
      expect(fresh.status).toBe(200);
      expect(fresh.text).toBe(`{"id":30,"name":"Palm","tag":"tall","version":${versionOf(fresh)}}`);
    });

    it('still answers 404 for an unknown id', async () => {
      const answer = await get(31_000, { ...AUTH, 'if-none-match': '*' });
      expect(answer.status).toBe(404);
    });
  });

  describe('Idempotency-Key', () => {
    it('replays a committed update: the same answer, not a second version', async () => {
      await create('{"id":40,"name":"Basil"}');
      const headers = { ...MERGE_PATCH, 'idempotency-key': '"update-40"' };
      const first = await patch(40, '{"name":"Thai basil"}', headers);
      expect(first.status).toBe(200);
      const again = await patch(40, '{"name":"Thai basil"}', headers);
      expect(again.status).toBe(200);
      expect(again.text).toBe(first.text);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(first.headers.get('etag')).toMatch(/^"[0-9]+"$/);
      expect(again.headers.get('etag')).toBe(first.headers.get('etag'));
      expect((await events(40)).length).toBe(2);
      const other = await patch(40, '{"name":"Lemon basil"}', headers);
      expect(other.status).toBe(422);
    });

    it('replays a committed create with the ETag it first had, even after an update', async () => {
      const headers = { ...JSON_HEADERS, 'idempotency-key': '"create-41"' };
      const first = await postPlant(api.url, '{"id":41,"name":"Chive"}', headers);
      expect(first.status).toBe(200);
      const version = versionOf(first);
      expect((await patch(41, '{"name":"Garlic chive"}')).status).toBe(200);
      const again = await postPlant(api.url, '{"id":41,"name":"Chive"}', headers);
      expect(again.status).toBe(200);
      expect(again.text).toBe('{"name":"Chive"}');
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.headers.get('etag')).toBe(`"${version}"`);
      const [key] = await store.rows("SELECT version FROM idempotency_keys WHERE key LIKE '%create-41%'");
      expect(BigInt(key!.version as bigint)).toBe(version);
    });
  });
});
