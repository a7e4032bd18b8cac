/**
 * The OWASP API Security Top 10 (2023) items that apply to this API, tried against a real server
 * on each store. API1 (object-level authorization) and API6 (sensitive business flows) do not
 * apply: every token sees the same plant collection and there are no flows beyond CRUD. API7
 * (SSRF): webhook URLs come from the operator's configuration, never from a request.
 */
import { parseJson } from '@plant-store/schema';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningApi, startInProcess } from './support/in-process.ts';
import { JSON_HEADERS, postPlant, send, TOKEN, TOKEN_NAME } from './support/http.ts';
import { type TestStoreInstance, testStores } from './support/stores.ts';

const AUTH = { authorization: `Bearer ${TOKEN}` };
const INJECTIONS = [
  "'; DROP TABLE plants; --",
  "1' OR '1'='1",
  '1; DELETE FROM plants',
  '$where: 1',
  '{"$gt": ""}',
  '<script>alert(1)</script>',
  '../../etc/passwd',
  '%00',
  `$${'{'}7*7}`,
  '\\u0027',
];

describe.each(testStores())('OWASP API Top 10 on $name', (testStore) => {
  let store: TestStoreInstance;
  let api: RunningApi;

  beforeAll(async () => {
    store = await testStore.setup();
    api = await startInProcess({
      env: { ...store.env, RATE_LIMIT_MAX: '1000', RATE_LIMIT_WINDOW_SECONDS: '60' },
    });
  });
  afterAll(async () => {
    await api?.stop();
    api?.cleanup();
    await store?.teardown();
  });

  describe('API2 broken authentication', () => {
    const operations: [string, string, string?][] = [
      ['POST', '/plants', '{"id":1,"name":"x"}'],
      ['GET', '/plants'],
      ['GET', '/plants/1'],
      ['DELETE', '/plants/1'],
      ['GET', '/metrics'],
    ];
    it.each(operations)(
      '%s %s answers 401 without, with a wrong, or with a misplaced token',
      async (method, path, body) => {
        const tries: Record<string, string>[] = [
          {},
          { authorization: 'Bearer wrong' },
          { authorization: `Basic ${Buffer.from(`${TOKEN}:`).toString('base64')}` },
          { authorization: `Bearer ${TOKEN}x` },
          { 'x-api-key': TOKEN },
          { cookie: `token=${TOKEN}` },
        ];
        for (const headers of tries) {
          const answer = await send(`${api.url}${path}?access_token=${TOKEN}`, {
            method,
            headers: { 'content-type': 'application/json', ...headers },
            body,
          });
          expect(answer.status).toBe(401);
          expect(answer.headers.get('www-authenticate')).toMatch(/^Bearer/);
          expect(answer.text).not.toContain(TOKEN);
        }
        expect(await store.ids()).toEqual([]);
      },
    );

    it('never writes a token into the logs, but names the token that made each request', async () => {
      await send(`${api.url}/plants`, { headers: { ...AUTH, 'x-request-id': 'named-1' } });
      await send(`${api.url}/plants`, { headers: { authorization: 'Bearer guessed-secret-123' } });
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(api.logs.join('\n')).not.toContain(TOKEN);
      expect(api.logs.join('\n')).not.toContain('guessed-secret-123');
      const line = JSON.parse(api.logs.find((entry) => entry.includes('"reqId":"named-1"'))!);
      expect(line).toMatchObject({ tokenName: TOKEN_NAME, status: 200, route: '/plants', method: 'GET' });
    });
  });

  describe('API3 broken object property level authorization (mass assignment, data exposure)', () => {
    it('ignores properties a client may not set and answers only the documented ones', async () => {
      const answer = await postPlant(
        api.url,
        '{"id":300,"name":"Fern","tag":"herb","created_at":"1970-01-01","owner":"admin","__proto__":{"admin":true},"constructor":{"prototype":{"x":1}}}',
      );
      expect(answer.status).toBe(200);
      expect(answer.text).toBe('{"name":"Fern","tag":"herb"}');
      const version = answer.headers.get('etag')!.slice(1, -1);
      expect((await send(`${api.url}/plants/300`, { headers: AUTH })).text).toBe(
        `{"id":300,"name":"Fern","tag":"herb","version":${version}}`,
      );
      // A patch cannot set the version (nor anything else undocumented) either.
      const patched = await send(`${api.url}/plants/300`, {
        method: 'PATCH',
        headers: { ...AUTH, 'content-type': 'application/merge-patch+json' },
        body: '{"version":1,"owner":"admin","__proto__":{"admin":true}}',
      });
      expect([patched.status, patched.text]).toStrictEqual([
        200,
        `{"id":300,"name":"Fern","tag":"herb","version":${version}}`,
      ]);
      expect(({} as Record<string, unknown>).admin).toBeUndefined();
    });

    it('answers errors with exactly {error, message}, never a stack, a path or SQL', async () => {
      const bodies = [
        '{',
        '[]',
        '{"id":"x"}',
        `{"id":1,"name":"${'x'.repeat(70_000)}"}`,
        '{"id":300,"name":"Dup"}',
      ];
      for (const body of bodies) {
        const answer = await postPlant(api.url, body);
        expect(Object.keys(answer.json as object).sort()).toEqual(['error', 'message']);
        expect(answer.text).not.toMatch(
          /\bat \S+ \(|node_modules|\.ts:\d|\.js:\d|SELECT|INSERT|sqlite|postgres|constraint/i,
        );
      }
    });

    it('never echoes request body content in an error', async () => {
      const marker = 'MARKER-7f3a';
      for (const body of [
        `{"id":"${marker}","name":"x"}`,
        `{"id":1,"name":{"${marker}":1}}`,
        `{"${marker}`,
        `{"id":1,"name":"x","tag":["${marker}"]}`,
      ]) {
        const answer = await postPlant(api.url, body);
        expect(answer.status).toBe(400);
        expect(answer.text).not.toContain(marker);
      }
    });
  });

  describe('API4 unrestricted resource consumption', () => {
    it('caps the body (413), the page size (400) and the request rate (429)', async () => {
      expect((await postPlant(api.url, `{"id":2,"name":"${'x'.repeat(70_000)}"}`)).status).toBe(413);
      expect((await send(`${api.url}/plants?limit=100000`, { headers: AUTH })).status).toBe(400);
      const limited = await startInProcess({
        env: { ...store.env, RATE_LIMIT_MAX: '5', RATE_LIMIT_WINDOW_SECONDS: '60' },
      });
      try {
        const statuses = [];
        for (let i = 0; i < 7; i++)
          statuses.push((await send(`${limited.url}/plants`, { headers: AUTH })).status);
        expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429]);
      } finally {
        await limited.stop();
        limited.cleanup();
      }
    });
  });

  describe('API5 broken function level authorization', () => {
    it('serves no administrative function over HTTP', async () => {
      for (const [method, path] of [
        ['POST', '/tokens'],
        ['GET', '/tokens'],
        ['POST', '/admin'],
        ['DELETE', '/plants'],
        ['PUT', '/plants/1'],
        ['PATCH', '/plants'],
      ] as const) {
        const answer = await send(`${api.url}${path}`, { method, headers: AUTH });
        expect([404, 405]).toContain(answer.status);
      }
    });
  });

  describe('API8 injection, through every field and parameter', () => {
    it.each(INJECTIONS)('stores %s verbatim as name and tag, and the table survives', async (text) => {
      const id = 1000n + BigInt(INJECTIONS.indexOf(text));
      const body = JSON.stringify({ id: Number(id), name: text, tag: text });
      expect((await postPlant(api.url, body)).status).toBe(200);
      const read = await send(`${api.url}/plants/${id}`, { headers: AUTH });
      expect(parseJson(read.text)).toEqual({ id, name: text, tag: text, version: expect.any(BigInt) });
    });

    it.each(INJECTIONS)('rejects %s as an id, limit or cursor with 400', async (text) => {
      const q = encodeURIComponent(text);
      expect((await send(`${api.url}/plants/${q}`, { headers: AUTH })).status).toBe(400);
      expect((await send(`${api.url}/plants/${q}`, { method: 'DELETE', headers: AUTH })).status).toBe(400);
      expect((await send(`${api.url}/plants?limit=${q}`, { headers: AUTH })).status).toBe(400);
      expect((await send(`${api.url}/plants?after=${q}`, { headers: AUTH })).status).toBe(400);
      expect((await postPlant(api.url, `{"id":${JSON.stringify(text)},"name":"x"}`)).status).toBe(400);
    });

    it('still holds exactly the plants created above', async () => {
      const ids = await store.ids();
      expect(ids).toEqual([300n, ...INJECTIONS.map((_, i) => 1000n + BigInt(i))]);
    });
  });

  describe('API8 security misconfiguration', () => {
    it('sends nosniff, no-store and no X-Powered-By on every answer, and no CORS by default', async () => {
      for (const answer of [
        await send(`${api.url}/plants`, { headers: AUTH }),
        await send(`${api.url}/nope`),
        await postPlant(api.url, '{'),
        await send(`${api.url}/openapi.json`),
        await send(`${api.url}/plants`, { headers: { origin: 'https://evil.example' } }),
      ]) {
        expect(answer.headers.get('x-content-type-options')).toBe('nosniff');
        expect(answer.headers.get('x-powered-by')).toBeNull();
        expect(answer.headers.get('access-control-allow-origin')).toBeNull();
      }
    });

    it('answers a malformed path with an Error, not a crash', async () => {
      for (const path of ['/plants/%', '/plants/%E0%A4%A', '/trpc/plants.create%E0']) {
        const answer = await send(`${api.url}${path}`, { method: 'POST', headers: JSON_HEADERS, body: '{}' });
        expect(answer.status).toBeLessThan(500);
      }
      expect((await send(`${api.url}/healthz`)).status).toBe(200);
    });
  });
});
