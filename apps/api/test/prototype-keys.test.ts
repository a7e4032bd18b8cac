import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { restRoutes } from '../src/http/rest.ts';
import { apiOnStore } from './support/api-on-store.ts';
import { JSON_HEADERS, send } from './support/http.ts';
import type { RunningApi } from './support/in-process.ts';
import { openSse } from './support/sse.ts';
import { testStores } from './support/stores.ts';

/** Names of Object.prototype's members, which a lookup in a plain object finds whatever was sent. */
const PROTOTYPE_NAMES = [
  'valueOf',
  '__proto__',
  'hasOwnProperty',
  'constructor',
  'toString',
  'isPrototypeOf',
  '__defineGetter__',
];
const ODD_QUERIES = [
  ...PROTOTYPE_NAMES.map((name) => `${name}=1`),
  // Repeated (a list) and all at once.
  'valueOf=1&valueOf=2',
  PROTOTYPE_NAMES.map((name) => `${name}=x`).join('&'),
];
const SECRETS_KEY = randomBytes(32).toString('base64');
const NO_SUCH_ENDPOINT = 'we_000000000000000000000000';

/** Error lines (pino level 50 and above) the api logged. */
const errorLines = (api: RunningApi) =>
  api.logs.filter((line) => (JSON.parse(line) as { level: number }).level >= 50);

describe.each(testStores())('request-controlled names never reach a prototype on $name', (testStore) => {
  let api: RunningApi;
  apiOnStore(testStore, (running) => ({ api } = running), {
    env: {
      WEBHOOK_ALLOW_PRIVATE_URLS: '1',
      ...(testStore.name === 'postgres' && { WEBHOOK_SECRETS_KEY: SECRETS_KEY }),
    },
  });

  it('answers every route that reads query parameters as it does without the odd ones, and logs no error', async () => {
    for (const id of [1, 2, 3]) {
      expect(
        (
          await send(`${api.url}/plants`, {
            method: 'POST',
            headers: JSON_HEADERS,
            body: `{"id":${id},"name":"Fern"}`,
          })
        ).status,
      ).toBe(200);
    }
    // Registered after the creates: its delivery list stays empty while the test runs.
    const registered = await send(`${api.url}/webhook-endpoints`, {
      method: 'POST',
      headers: JSON_HEADERS,
      body: '{"url":"http://127.0.0.1:9/hook"}',
    });
    expect(registered.status).toBe(201);
    const endpoint = (registered.json as { id: string }).id;

    // One request per route with parameters (the event stream has its own test below); each is
    // answered the same every time it is sent.
    const requests: { route: string; method: string; path: string; status: number }[] = [
      { route: 'GET /plants', method: 'GET', path: '/plants?limit=2', status: 200 },
      { route: 'GET /plants/{id}', method: 'GET', path: '/plants/2', status: 200 },
      { route: 'DELETE /plants/{id}', method: 'DELETE', path: '/plants/99', status: 404 },
      { route: 'GET /webhook-endpoints', method: 'GET', path: '/webhook-endpoints', status: 200 },
      {
        route: 'GET /webhook-endpoints/{id}',
        method: 'GET',
        path: `/webhook-endpoints/${endpoint}`,
        status: 200,
      },
      {
        route: 'DELETE /webhook-endpoints/{id}',
        method: 'DELETE',
        path: `/webhook-endpoints/${NO_SUCH_ENDPOINT}`,
        status: 404,
      },
      {
        route: 'POST /webhook-endpoints/{id}/rotate-secret',
        method: 'POST',
        path: `/webhook-endpoints/${NO_SUCH_ENDPOINT}/rotate-secret`,
        status: 404,
      },
      {
        route: 'GET /webhook-endpoints/{id}/deliveries',
        method: 'GET',
        path: `/webhook-endpoints/${endpoint}/deliveries`,
        status: 200,
      },
      {
        route: 'POST /webhook-endpoints/{id}/deliveries/{deliveryId}/redeliver',
        method: 'POST',
        path: `/webhook-endpoints/${endpoint}/deliveries/msg_00000000000000000000000000000000/redeliver`,
        status: 404,
      },
      {
        route: 'POST /webhook-endpoints/{id}/ping',
        method: 'POST',
        path: `/webhook-endpoints/${NO_SUCH_ENDPOINT}/ping`,
        status: 404,
      },
    ];
    const withParameters = restRoutes()
      .filter((route) => !route.inputFromBody && !route.operation.stream)
      .map((route) => `${route.method} ${route.path}`);
    expect(requests.map((request) => request.route).sort()).toStrictEqual(withParameters.sort());

    for (const { method, path, status } of requests) {
      const plain = await send(`${api.url}${path}`, { method, headers: JSON_HEADERS });
      expect([path, plain.status]).toStrictEqual([path, status]);
      for (const query of ODD_QUERIES) {
        const odd = await send(`${api.url}${path}${path.includes('?') ? '&' : '?'}${query}`, {
          method,
          headers: JSON_HEADERS,
        });
        expect([path, query, odd.status, odd.text]).toStrictEqual([path, query, plain.status, plain.text]);
      }
    }
    expect(errorLines(api)).toStrictEqual([]);
  });

  it('still validates the known parameters beside them', async () => {
    const bad = await send(`${api.url}/plants?limit=0&valueOf=1&__proto__=1`, { headers: JSON_HEADERS });
    expect([bad.status, bad.text]).toStrictEqual([
      400,
      (await send(`${api.url}/plants?limit=0`, { headers: JSON_HEADERS })).text,
    ]);
    expect(bad.status).toBe(400);
    const page = await send(`${api.url}/plants?hasOwnProperty=1&limit=1&constructor=1`, {
      headers: JSON_HEADERS,
    });
    expect([page.status, page.text, page.headers.get('link')]).toStrictEqual([
      200,
      '[{"id":1,"name":"Fern","version":1}]',
      '</plants?limit=1&after=1>; rel="next"',
    ]);
    expect(errorLines(api)).toStrictEqual([]);
  });

  it('ignores them on the body routes', async () => {
    const created = await send(`${api.url}/plants?valueOf=1&__proto__=1`, {
      method: 'POST',
      headers: JSON_HEADERS,
      body: '{"id":10,"name":"Fern"}',
    });
    expect([created.status, created.text]).toStrictEqual([200, '{"name":"Fern"}']);
    expect(errorLines(api)).toStrictEqual([]);
  });

  it('streams events with them in the query and a Last-Event-ID named like one, validated as before', async () => {
    const stream = await openSse(`${api.url}/plants/events?after=0&valueOf=1&__proto__=1&toString=1`);
    expect(stream.status).toBe(200);
    expect((await stream.waitFor(3)).map((event) => event.event)).toStrictEqual([
      'plant.created',
      'plant.created',
      'plant.created',
    ]);
    stream.close();
    const filtered = await openSse(
      `${api.url}/plants/events?types=plant.deleted&constructor=1&hasOwnProperty=1`,
    );
    expect(filtered.status).toBe(200);
    filtered.close();
    const badResume = await openSse(`${api.url}/plants/events?valueOf=1`, { 'last-event-id': '__proto__' });
    expect([badResume.status, badResume.body]).toStrictEqual([
      400,
      {
        error: 400,
        message: 'Invalid request parameters: after must be an event id (a non-negative 64-bit integer).',
      },
    ]);
    expect(errorLines(api)).toStrictEqual([]);
  });

  it('answers tRPC calls of such names 404 and a malformed superjson input 400, over both of its paths', async () => {
    for (const name of PROTOTYPE_NAMES) {
      for (const path of [name, `plants.${name}`]) {
        const answer = await send(`${api.url}/trpc/${path}`, { headers: JSON_HEADERS });
        expect([path, answer.status]).toStrictEqual([path, 404]);
      }
    }
    // superjson's metadata names what to revive: unknown kinds, a class it does not know, a prototype.
    const metas = [
      { values: { id: ['nosuch'] } },
      { values: { id: ['class', 'Foo'] } },
      { values: { ['__proto__']: ['bigint'] } },
    ];
    for (const meta of metas) {
      const body = JSON.stringify({ json: { id: '1', name: 'x' }, meta });
      // POST mutations take the direct path, queries tRPC's own handler.
      const mutation = await send(`${api.url}/trpc/plants.create`, {
        method: 'POST',
        headers: JSON_HEADERS,
        body,
      });
      const query = await send(
        `${api.url}/trpc/plants.get?input=${encodeURIComponent(JSON.stringify({ json: { id: '1' }, meta }))}`,
        { headers: JSON_HEADERS },
      );
      for (const answer of [mutation, query]) {
        expect([body, answer.status]).toStrictEqual([body, 400]);
        expect(answer.json).toMatchObject({
          error: { json: { data: { code: 'BAD_REQUEST', httpStatus: 400 } } },
        });
        expect(answer.text).not.toMatch(/ at |\/src\/|node_modules/);
      }
    }
    expect(errorLines(api)).toStrictEqual([]);
    expect((await send(`${api.url}/plants/1`, { headers: JSON_HEADERS })).text).toBe(
      '{"id":1,"name":"Fern","version":1}',
    );
  });
});
