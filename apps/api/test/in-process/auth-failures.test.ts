import { describe, expect, it } from 'vitest';
import { apiOnStore } from '../support/api-on-store.ts';
import type { RunningApi } from '../support/in-process.ts';
import { errorBody, send, TOKEN } from '../support/http.ts';
import { type TestStoreInstance, testStores } from '../support/stores.ts';

/** AUTH_FAILURE_MAX's default, per RATE_LIMIT_WINDOW_SECONDS (60 s) and client address. */
const MAX_FAILURES = 30;
const INVALID = errorBody(401, 'The bearer token is not valid.');
const TOO_MANY =
  /^\{"error":429,"message":"Too many failed authentications from this address: the limit is 30 per 60 s; retry in \d+ s\."\}$/;
const TOO_MANY_MESSAGE =
  /^Too many failed authentications from this address: the limit is 30 per 60 s; retry in \d+ s\.$/;

describe.each(testStores())('failed authentication on $name', (testStore) => {
  let api: RunningApi;
  let store: TestStoreInstance;
  apiOnStore(testStore, (running) => ({ api, store } = running));

  const as = (authorization: string): Record<string, string> => ({ authorization });

  it('answers 429 with Retry-After once an address has failed 30 times, on /metrics, REST and tRPC alike', async () => {
    const guesses = [];
    for (let i = 0; i < MAX_FAILURES; i++) {
      const path = i % 2 === 0 ? '/metrics' : '/plants';
      guesses.push(await send(`${api.url}${path}`, { headers: as(`Bearer guess-${i}-0123456789abcdef`) }));
    }
    expect(guesses.map((g) => [g.status, g.text])).toEqual(Array(MAX_FAILURES).fill([401, INVALID]));

    const create = {
      method: 'POST',
      headers: { ...as('Bearer guess-x-0123456789abcdef'), 'content-type': 'application/json' },
      body: '{"id":1,"name":"Fern"}',
    };
    for (const [path, init] of [
      ['/metrics', {}],
      ['/plants', {}],
      ['/plants', create],
      ['/trpc/plants.create', { ...create, body: '{"json":{"id":"1","name":"Fern"}}' }],
      // A malformed header is a failed authentication too.
      ['/plants/1', { headers: as('Basic Zm9vOmJhcg==') }],
    ] as const) {
      const answer = await send(`${api.url}${path}`, {
        headers: as('Bearer another-guess-0123456789'),
        ...init,
      });
      expect([path, answer.status]).toEqual([path, 429]);
      if (path.startsWith('/trpc/')) {
        // Under /trpc, the same message in tRPC's error shape.
        expect(answer.json).toEqual({
          error: {
            json: {
              message: expect.stringMatching(TOO_MANY_MESSAGE),
              code: -32029,
              data: { code: 'TOO_MANY_REQUESTS', httpStatus: 429 },
            },
          },
        });
      } else expect(answer.text).toMatch(TOO_MANY);
      expect(Number(answer.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(Number(answer.headers.get('retry-after'))).toBeLessThanOrEqual(60);
    }
    expect(await store.ids()).toEqual([]);
  });

  it('still serves valid tokens, requests without one, and probes from that address', async () => {
    expect((await send(`${api.url}/plants`, { headers: as(`Bearer ${TOKEN}`) })).status).toBe(200);
    expect((await send(`${api.url}/metrics`, { headers: as(`Bearer ${TOKEN}`) })).status).toBe(200);
    const missing = await send(`${api.url}/plants`);
    expect(missing.status).toBe(401);
    expect(missing.headers.get('www-authenticate')).toBe('Bearer');
    for (const probe of ['/healthz', '/readyz', '/openapi.json']) {
      expect([probe, (await send(`${api.url}${probe}`, { headers: as('Bearer guess') })).status]).toEqual([
        probe,
        200,
      ]);
    }
  });
});
