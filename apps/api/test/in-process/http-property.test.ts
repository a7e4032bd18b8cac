import { parseJson, stringifyJson } from '@plant-store/schema';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { apiOnStore } from '../support/api-on-store.ts';
import type { RunningApi } from '../support/in-process.ts';
import { postPlant, TOKEN } from '../support/http.ts';
import { type TestStoreInstance, testStores } from '../support/stores.ts';

const INT64 = fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n });

/** Bodies that are sometimes NewPlants, sometimes nearly, sometimes anything at all. */
const body = fc.oneof(
  fc
    .record({ id: INT64, name: fc.string(), tag: fc.option(fc.string(), { nil: undefined }) })
    .map(stringifyJson),
  fc
    .record(
      {
        id: fc.oneof(INT64, fc.bigInt(), fc.jsonValue()),
        name: fc.oneof(fc.string(), fc.jsonValue()),
        tag: fc.jsonValue(),
        extra: fc.jsonValue(),
      },
      { requiredKeys: [] },
    )
    .map(stringifyJson),
  fc.jsonValue().map((value) => JSON.stringify(value) ?? ''),
  fc.string(),
  fc.string({ unit: 'binary' }),
);

const headers = fc.record({
  authorization: fc.constantFrom(
    `Bearer ${TOKEN}`,
    `bearer ${TOKEN}`,
    'Bearer nope',
    '',
    'Basic x',
    `Bearer  ${TOKEN} `,
  ),
  'content-type': fc.constantFrom(
    'application/json',
    'application/json; charset=utf-8',
    'application/json;charset=UTF-8',
    'text/plain',
    'application/jsonx',
    '',
  ),
});

describe.each(testStores())('POST /plants with random input on $name', (testStore) => {
  let store: TestStoreInstance;
  let api: RunningApi;

  apiOnStore(testStore, (running) => ({ api, store } = running));

  it('never answers 5xx, answers every error as an Error, and stores exactly what it acknowledged', async () => {
    const acknowledged = new Set<string>();
    await fc.assert(
      fc.asyncProperty(body, headers, async (text, sent) => {
        const requestHeaders = Object.fromEntries(Object.entries(sent).filter(([, value]) => value !== ''));
        const answer = await postPlant(api.url, text, requestHeaders);
        expect(answer.status).toBeLessThan(500);
        if (answer.status === 200) {
          acknowledged.add(String((parseJson(text) as { id: bigint }).id));
          expect(answer.json).toEqual(expect.objectContaining({ name: expect.any(String) }));
        } else {
          expect(Object.keys(answer.json as object).sort()).toEqual(['error', 'message']);
          expect((answer.json as { error: number }).error).toBe(answer.status);
          expect((answer.json as { message: string }).message).not.toMatch(/node_modules|\.ts:|\n\s+at /);
        }
      }),
      { numRuns: 300 },
    );
    expect((await store.ids()).map(String).sort()).toEqual([...acknowledged].sort());
  });
});
