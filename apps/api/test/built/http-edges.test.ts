import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiProcess, startApiProcess } from '../support/api-process.ts';
import { errorBody, JSON_HEADERS, postPlant, send, TOKEN } from '../support/http.ts';
import { type TestStoreInstance, testStores } from '../support/stores.ts';

const AUTH = { authorization: `Bearer ${TOKEN}` };

/** One raw request, read whole: what a HEAD answer really carries on the wire (fetch hides it). */
function raw(url: string, method: string, headers: Record<string, string> = AUTH) {
  return new Promise<{ status: number; headers: Record<string, unknown>; body: string }>(
    (resolve, reject) => {
      const req = request(url, { method, headers }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => {
          body += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
      });
      req.on('error', reject);
      req.setTimeout(5_000, () => req.destroy(new Error(`${method} ${url}: no complete answer in 5 s`)));
      req.end();
    },
  );
}

/** The headers GET and HEAD must agree on (RFC 9110 §9.3.2), without those that differ per request. */
function comparable(headers: Record<string, unknown>) {
  const {
    date: _date,
    'x-request-id': _id,
    ratelimit: _left,
    connection: _c,
    'keep-alive': _k,
    ...rest
  } = headers;
  return rest;
}

describe.each(testStores())('HTTP edges on $name (built service)', (testStore) => {
  let store: TestStoreInstance;
  let api: ApiProcess;
  beforeAll(async () => {
    store = await testStore.setup();
    api = await startApiProcess({
      env: {
        ...store.env,
        WEBHOOK_SECRETS_KEY: randomBytes(32).toString('base64'),
        EVENT_STREAMS_PER_TOKEN: '3',
      },
    });
    for (const body of ['{"id":1,"name":"Fern"}', '{"id":2,"name":"Moss","tag":"green"}']) {
      expect((await postPlant(api.url, body)).status).toBe(200);
    }
  });
  afterAll(async () => {
    await api?.stop();
    api?.cleanup();
    await store?.teardown();
  });

  it('answers If-None-Match: * on the lists with 200 and the list: they have no ETag to match', async () => {
    for (const path of ['/plants', '/webhook-endpoints']) {
      const answer = await send(`${api.url}${path}`, { headers: { ...AUTH, 'if-none-match': '*' } });
      expect({ path, status: answer.status, etag: answer.headers.get('etag') }).toEqual({
        path,
        status: 200,
        etag: null,
      });
      expect(answer.text).toBe(
        path === '/plants'
          ? '[{"id":1,"name":"Fern","version":1},{"id":2,"name":"Moss","tag":"green","version":2}]'
          : '[]',
      );
    }
    const plant = await send(`${api.url}/plants/1`, { headers: { ...AUTH, 'if-none-match': '*' } });
    expect([plant.status, plant.headers.get('etag'), plant.text]).toEqual([304, '"1"', '']);
  });

  it('serves HEAD wherever GET is served: the same status and headers, no body', async () => {
    for (const path of [
      '/plants/1',
      '/plants?limit=1',
      '/plants/404',
      '/plants/x',
      '/webhook-endpoints',
      '/openapi.json',
    ]) {
      const get = await raw(`${api.url}${path}`, 'GET');
      const head = await raw(`${api.url}${path}`, 'HEAD');
      expect({ path, status: head.status, body: head.body }).toEqual({ path, status: get.status, body: '' });
      expect(comparable(head.headers)).toEqual(comparable(get.headers));
    }
    const head = await raw(`${api.url}/plants?limit=1`, 'HEAD');
    expect(head.headers.link).toBe('</plants?limit=1&after=1>; rel="next"');
    expect(head.headers['content-length']).toBe(String('[{"id":1,"name":"Fern","version":1}]'.length));
    expect((await raw(`${api.url}/plants/1`, 'HEAD', {})).status).toBe(401);
    // What the store holds is unchanged.
    expect(await store.ids()).toEqual([1n, 2n]);
  });

  it('answers HEAD on the event stream as GET would, with no body and no stream left open', async () => {
    const head = await raw(`${api.url}/plants/events`, 'HEAD');
    expect([head.status, head.headers['content-type'], head.body]).toEqual([
      200,
      'text/event-stream; charset=utf-8',
      '',
    ]);
    const bad = await raw(`${api.url}/plants/events?after=-1`, 'HEAD');
    expect([bad.status, bad.body]).toEqual([400, '']);
    // Every HEAD closed its stream at once: far more of them than a token may hold open pass.
    for (let i = 0; i < 12; i++) expect((await raw(`${api.url}/plants/events`, 'HEAD')).status).toBe(200);
  });

  it('names HEAD in the Allow of a 405 on a path served with GET', async () => {
    const answer = await send(`${api.url}/plants/1`, { method: 'PUT', headers: AUTH });
    expect([answer.status, answer.headers.get('allow')]).toEqual([405, 'GET, HEAD, PATCH, DELETE']);
    expect(answer.text).toBe(
      errorBody(405, 'PUT is not allowed on this path; allowed: GET, HEAD, PATCH, DELETE.'),
    );
    const create = await send(`${api.url}/webhook-endpoints/we_000000000000000000000000/ping`, {
      method: 'GET',
      headers: AUTH,
    });
    expect([create.status, create.headers.get('allow')]).toEqual([405, 'POST']);
  });

  it('names the stored plant in Content-Location on a create, and on its keyed replay', async () => {
    const body = '{"id":9007199254740993,"name":"Monstera"}';
    const headers = { ...JSON_HEADERS, 'idempotency-key': '"create-9007199254740993"' };
    const first = await postPlant(api.url, body, headers);
    expect([first.status, first.text, first.headers.get('content-location')]).toEqual([
      200,
      '{"name":"Monstera"}',
      '/plants/9007199254740993',
    ]);
    const replay = await postPlant(api.url, body, headers);
    expect([
      replay.status,
      replay.headers.get('idempotent-replayed'),
      replay.headers.get('content-location'),
    ]).toEqual([200, 'true', '/plants/9007199254740993']);
    const read = await send(`${api.url}${first.headers.get('content-location')}`, { headers: AUTH });
    expect(read.text).toBe(
      `{"id":9007199254740993,"name":"Monstera","version":${first.headers.get('etag')!.slice(1, -1)}}`,
    );
    expect(await store.ids()).toEqual([1n, 2n, 9007199254740993n]);
    // A refused create names nothing.
    expect((await postPlant(api.url, body)).headers.get('content-location')).toBeNull();
  });

  it('takes Idempotency-Keys of exactly 255 characters, bare or quoted, and refuses 256', async () => {
    const create = (id: number, key: string) =>
      postPlant(api.url, `{"id":${id},"name":"Key ${id}"}`, { ...JSON_HEADERS, 'idempotency-key': key });
    expect((await create(10, 'k'.repeat(255))).status).toBe(200);
    expect((await create(11, `"${'q'.repeat(255)}"`)).status).toBe(200);
    for (const key of ['k'.repeat(256), `"${'q'.repeat(256)}"`, `"${'\\"'.repeat(128)}"`]) {
      const refused = await create(12, key);
      expect([refused.status, refused.text]).toEqual([
        400,
        errorBody(
          400,
          'The Idempotency-Key header must be a string of 1 to 255 printable ASCII characters, such as "8e03978e-40d5-43e8-bc93-6894a57f9324".',
        ),
      ]);
    }
    expect((await store.ids()).filter((id) => id >= 10n && id <= 12n)).toEqual([10n, 11n]);
  });

  it('takes a Last-Event-ID up to int64’s maximum, and refuses one past it', async () => {
    const resume = (id: string) => raw(`${api.url}/plants/events`, 'HEAD', { ...AUTH, 'last-event-id': id });
    // Well formed (never a 400), but past the newest event: 410.
    expect((await resume('9223372036854775807')).status).toBe(410);
    expect((await resume('9223372036854775808')).status).toBe(400);
    expect((await resume('007')).status).toBe(400);
    const refused = await send(`${api.url}/plants/events`, {
      headers: { ...AUTH, 'last-event-id': '9223372036854775808' },
    });
    expect(refused.text).toBe(
      errorBody(
        400,
        'Invalid request parameters: after must be an event id (a non-negative 64-bit integer).',
      ),
    );
  });

  it('refuses a number where an event type belongs with a 400 naming it, not a 500', async () => {
    const answer = await send(`${api.url}/webhook-endpoints`, {
      method: 'POST',
      headers: JSON_HEADERS,
      body: '{"url":"https://hooks.example/x","events":[9007199254740993]}',
    });
    expect([answer.status, answer.text]).toEqual([
      400,
      errorBody(
        400,
        'Invalid request body: events.0 must be one of the event types plant.created, plant.updated, plant.deleted (not 9007199254740993).',
      ),
    ]);
    expect((await send(`${api.url}/webhook-endpoints`, { headers: AUTH })).text).toBe('[]');
  });
});
