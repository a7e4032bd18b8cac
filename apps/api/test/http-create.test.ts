import { describe, expect, it } from 'vitest';
import { apiOnStore } from './support/api-on-store.ts';
import type { RunningApi } from './support/in-process.ts';
import { errorBody, JSON_HEADERS, postPlant, send, TOKEN } from './support/http.ts';
import { type TestStoreInstance, testStores } from './support/stores.ts';

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const ID_MESSAGE =
  'Invalid request body: id must be an integer from -9223372036854775808 to 9223372036854775807.';

describe.each(testStores())('POST /plants on $name', (testStore) => {
  let store: TestStoreInstance;
  let api: RunningApi;
  /** Every id answered 200 so far: the store must hold exactly these. */
  const acknowledged = new Set<bigint>();
  let nextId = 1000n;

  apiOnStore(testStore, (running) => ({ api, store } = running));

  async function create(id: bigint, rest = ',"name":"Fern"', headers = JSON_HEADERS) {
    const answer = await postPlant(api.url, `{"id":${id}${rest}}`, headers);
    if (answer.status === 200) acknowledged.add(id);
    return answer;
  }

  async function expectStoreHoldsExactlyAcknowledged() {
    expect(await store.ids()).toEqual([...acknowledged].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
  }

  describe('accepts a NewPlant', () => {
    it('answers 200 with exactly {name, tag} as application/json', async () => {
      const id = nextId++;
      const answer = await create(id, ',"name":"Fern","tag":"herb"');
      expect(answer.status).toBe(200);
      expect(answer.text).toBe('{"name":"Fern","tag":"herb"}');
      expect(answer.headers.get('content-type')).toBe('application/json; charset=utf-8');
      expect(await store.ids()).toContain(id);
    });

    it('omits tag when it was not sent', async () => {
      const answer = await create(nextId++);
      expect(answer.status).toBe(200);
      expect(answer.text).toBe('{"name":"Fern"}');
    });

    it('ignores unknown extra fields', async () => {
      const answer = await create(nextId++, ',"name":"Fern","color":"green","nested":{"a":[1,2]}');
      expect(answer.status).toBe(200);
      expect(answer.text).toBe('{"name":"Fern"}');
    });

    it('treats application/json; charset=utf-8 like application/json', async () => {
      const utf8 = { ...JSON_HEADERS, 'content-type': 'application/json; charset=utf-8' };
      expect((await create(nextId++, undefined, utf8)).status).toBe(200);
    });

    it('accepts the bearer scheme name in any case', async () => {
      const mixedCase = { ...JSON_HEADERS, authorization: `bEaReR ${TOKEN}` };
      expect((await create(nextId++, undefined, mixedCase)).status).toBe(200);
    });

    it('stores non-ASCII names exactly', async () => {
      const answer = await create(nextId++, ',"name":"Monstera 🌿 deliciosa","tag":"ça"');
      expect(answer.status).toBe(200);
      expect(answer.text).toBe('{"name":"Monstera 🌿 deliciosa","tag":"ça"}');
    });

    it('accepts a name of 200 characters and a tag of 100, counted in characters', async () => {
      const id = nextId++;
      const [name, tag] = ['🌿'.repeat(200), 'ü'.repeat(100)];
      const answer = await create(id, `,"name":"${name}","tag":"${tag}"`);
      expect(answer.status).toBe(200);
      expect(answer.text).toBe(JSON.stringify({ name, tag }));
      const read = await send(`${api.url}/plants/${id}`, { headers: { authorization: `Bearer ${TOKEN}` } });
      const version = answer.headers.get('etag')!.slice(1, -1);
      expect(read.text).toBe(`{"id":${id},"name":"${name}","tag":"${tag}","version":${version}}`);
      expect(read.headers.get('etag')).toBe(`"${version}"`);
    });
  });

  describe('int64 ids are exact over the whole range', () => {
    const edges = [
      INT64_MIN,
      INT64_MIN + 1n,
      -(2n ** 53n) - 1n,
      2n ** 53n - 1n,
      2n ** 53n,
      2n ** 53n + 1n,
      INT64_MAX,
    ];
    it.each(edges)('stores %s exactly', async (id) => {
      const answer = await create(id);
      expect(answer.status).toBe(200);
      expect(await store.ids()).toContain(id);
      const again = await create(id);
      expect(again.status).toBe(409);
      expect(again.text).toBe(errorBody(409, `A plant with id ${id} already exists.`));
    });

    it('keeps 9007199254740993 and 9007199254740992 apart', async () => {
      const ids = await store.ids();
      expect(ids).toContain(9007199254740993n);
      expect(ids).toContain(9007199254740992n);
    });

    it.each([
      ['2^63', '9223372036854775808'],
      ['-2^63 - 1', '-9223372036854775809'],
      ['a 30-digit integer', '123456789012345678901234567890'],
    ])('rejects %s with 400', async (_, literal) => {
      const answer = await postPlant(api.url, `{"id":${literal},"name":"Fern"}`);
      expect(answer.status).toBe(400);
      expect(answer.text).toBe(errorBody(400, ID_MESSAGE));
    });
  });

  describe('rejects what is not a NewPlant with 400 and stores nothing', () => {
    it.each([
      ['a string id', '{"id":"12","name":"Fern"}', ID_MESSAGE],
      ['a boolean id', '{"id":true,"name":"Fern"}', ID_MESSAGE],
      ['a null id', '{"id":null,"name":"Fern"}', ID_MESSAGE],
      ['a fractional id', '{"id":1.5,"name":"Fern"}', ID_MESSAGE],
      ['an exponent id', '{"id":1e3,"name":"Fern"}', ID_MESSAGE],
      ['an empty-string id', '{"id":"","name":"Fern"}', ID_MESSAGE],
      ['an array id', '{"id":[1],"name":"Fern"}', ID_MESSAGE],
      ['a missing id', '{"name":"Fern"}', 'Invalid request body: id is required.'],
      ['a missing name', '{"id":77}', 'Invalid request body: name is required.'],
      ['a numeric name', '{"id":77,"name":5}', 'Invalid request body: name must be a string.'],
      ['a null tag', '{"id":77,"name":"Fern","tag":null}', 'Invalid request body: tag must be a string.'],
      [
        'a name of 201 characters',
        `{"id":77,"name":"${'x'.repeat(201)}"}`,
        'Invalid request body: name must be at most 200 characters.',
      ],
      [
        'a tag of 101 characters',
        `{"id":77,"name":"Fern","tag":"${'🌿'.repeat(101)}"}`,
        'Invalid request body: tag must be at most 100 characters.',
      ],
      [
        'a 60,000-character name (under the body limit)',
        `{"id":77,"name":"${'x'.repeat(60_000)}"}`,
        'Invalid request body: name must be at most 200 characters.',
      ],
      [
        'a NUL character in the name',
        '{"id":77,"name":"Fe\\u0000rn"}',
        'Invalid request body: name must be Unicode text without NUL (U+0000) characters or unpaired surrogates.',
      ],
      [
        'an unpaired surrogate in the tag',
        '{"id":77,"name":"Fern","tag":"x\\ud800"}',
        'Invalid request body: tag must be Unicode text without NUL (U+0000) characters or unpaired surrogates.',
      ],
      [
        'several bad fields',
        '{"id":"x","name":false}',
        `Invalid request body: ${ID_MESSAGE.slice('Invalid request body: '.length, -1)}; name must be a string.`,
      ],
      ['an array body', '[]', 'The request body must be a JSON object.'],
      ['a null body', 'null', 'The request body must be a JSON object.'],
      ['a number body', '42', 'The request body must be a JSON object.'],
      ['a string body', '"plant"', 'The request body must be a JSON object.'],
      ['malformed JSON', '{"id":1,', 'The request body is not valid JSON.'],
      ['trailing garbage', '{"id":1,"name":"Fern"} x', 'The request body is not valid JSON.'],
      ['a duplicate key', '{"id":1,"id":2,"name":"Fern"}', 'The request body is not valid JSON.'],
      ['an empty body', '', 'The request body is required.'],
      ['a whitespace body', '  \n ', 'The request body is required.'],
    ])('%s', async (_, body, message) => {
      const before = await store.ids();
      const answer = await postPlant(api.url, body);
      expect(answer.status).toBe(400);
      expect(answer.text).toBe(errorBody(400, message));
      expect(answer.headers.get('content-type')).toBe('application/json; charset=utf-8');
      expect(await store.ids()).toEqual(before);
    });

    it('a request with no body and no content type', async () => {
      const answer = await send(`${api.url}/plants`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      expect(answer.status).toBe(400);
      expect(answer.text).toBe(errorBody(400, 'The request body is required.'));
    });
  });

  describe('authentication', () => {
    it('answers 401 with WWW-Authenticate: Bearer without a token', async () => {
      const answer = await postPlant(api.url, `{"id":${nextId++},"name":"Fern"}`, {
        'content-type': 'application/json',
      });
      expect(answer.status).toBe(401);
      expect(answer.headers.get('www-authenticate')).toBe('Bearer');
      expect(answer.text).toBe(
        errorBody(401, 'Missing bearer token: send it as "Authorization: Bearer <token>".'),
      );
    });

    it.each([
      ['an unknown token', 'Bearer not-the-token'],
      ['a token prefix', `Bearer ${TOKEN.slice(0, -1)}`],
      ['another scheme', `Basic ${Buffer.from(`user:${TOKEN}`).toString('base64')}`],
      ['a bare token', TOKEN],
      ['a scheme without token', 'Bearer'],
    ])('answers 401 with error="invalid_token" for %s', async (_, authorization) => {
      const answer = await postPlant(api.url, `{"id":${nextId++},"name":"Fern"}`, {
        authorization,
        'content-type': 'application/json',
      });
      expect(answer.status).toBe(401);
      expect(answer.headers.get('www-authenticate')).toBe('Bearer error="invalid_token"');
      expect(answer.text).toBe(errorBody(401, 'The bearer token is not valid.'));
    });

    it('checks the token before reading the body', async () => {
      const answer = await postPlant(api.url, '{not json', { 'content-type': 'text/plain' });
      expect(answer.status).toBe(401);
    });
  });

  describe('other errors', () => {
    it('answers 409 for an id that already exists, keeping the first plant', async () => {
      const id = nextId++;
      expect((await create(id, ',"name":"First"')).status).toBe(200);
      const answer = await create(id, ',"name":"Second"');
      expect(answer.status).toBe(409);
      expect(answer.text).toBe(errorBody(409, `A plant with id ${id} already exists.`));
    });

    it('answers 413 for a body over 64 KiB', async () => {
      const before = await store.ids();
      const answer = await postPlant(api.url, `{"id":${nextId++},"name":"${'x'.repeat(70_000)}"}`);
      expect(answer.status).toBe(413);
      expect(answer.text).toBe(errorBody(413, 'The request body is larger than 65536 bytes.'));
      expect(await store.ids()).toEqual(before);
    });

    it.each([
      ['text/plain', 'text/plain'],
      ['a form', 'application/x-www-form-urlencoded'],
      ['XML', 'application/xml'],
      ['JSON in Latin-1', 'application/json; charset=iso-8859-1'],
    ])('answers 415 for %s', async (_, contentType) => {
      const answer = await postPlant(api.url, `{"id":${nextId++},"name":"Fern"}`, {
        authorization: `Bearer ${TOKEN}`,
        'content-type': contentType,
      });
      expect(answer.status).toBe(415);
      expect(answer.text).toBe(
        errorBody(415, 'The request body must be JSON, sent with "Content-Type: application/json".'),
      );
    });

    it('answers 404 with an Error body for an unknown path', async () => {
      const answer = await send(`${api.url}/nope`, { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(answer.status).toBe(404);
      expect(answer.text).toBe(errorBody(404, 'There is no operation at this method and path.'));
    });

    it('answers 405 with Allow for a method the path does not serve', async () => {
      const answer = await send(`${api.url}/plants`, { method: 'PUT', headers: JSON_HEADERS, body: '{}' });
      expect(answer.status).toBe(405);
      expect(answer.headers.get('allow')).toContain('POST');
      expect(answer.json).toEqual({ error: 405, message: expect.stringContaining('PUT is not allowed') });
    });
  });

  describe('concurrency', () => {
    it('answers exactly one 200 and 409 for the rest when 40 clients create one id at once', async () => {
      const id = nextId++;
      const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => create(id, `,"name":"P${i}"`)));
      const statuses = answers.map((answer) => answer.status).sort();
      expect(statuses.filter((s) => s === 200)).toHaveLength(1);
      expect(statuses.filter((s) => s === 409)).toHaveLength(39);
    });

    it('acknowledges 200 distinct concurrent creates', async () => {
      const ids = Array.from({ length: 200 }, () => nextId++);
      const answers = await Promise.all(ids.map((id) => create(id)));
      expect(answers.every((answer) => answer.status === 200)).toBe(true);
    });
  });

  it('every answer carries nosniff and a request id; no X-Powered-By', async () => {
    const answer = await postPlant(api.url, '[]', { 'x-request-id': 'abc-123', ...JSON_HEADERS });
    expect(answer.headers.get('x-content-type-options')).toBe('nosniff');
    expect(answer.headers.get('x-request-id')).toBe('abc-123');
    expect(answer.headers.get('x-powered-by')).toBeNull();
  });

  it('finally, the store holds exactly the acknowledged plants', async () => {
    await expectStoreHoldsExactlyAcknowledged();
  });
});
