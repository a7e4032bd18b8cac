import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiOnStore } from '../support/api-on-store.ts';
import { type RunningApi, startInProcess } from '../support/in-process.ts';
import { postPlant, send, TOKEN } from '../support/http.ts';
import {
  postgresAvailable,
  postgresTestStore,
  type TestStoreInstance,
  testStores,
} from '../support/stores.ts';

const HEADERS = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/merge-patch+json' };
const RUNS = 200;

const name = fc
  .string({ minLength: 1, maxLength: 20 })
  .filter((text) => text.isWellFormed() && !text.includes('\0'));

/**
 * Two clients PATCH the same plant with the same If-Match at the same time, `RUNS` times, each
 * through one of `urls`: exactly one gets 200, the other 412, and the plant holds the winner's name.
 */
async function race(urls: readonly [string, string], id: number): Promise<void> {
  expect((await postPlant(urls[0], `{"id":${id},"name":"start"}`)).status).toBe(200);
  // Each run's names are its own: a PATCH repeating the name the plant already has is a no-op, which
  // rightly answers 200 beside the other's 200 (its condition held, and it changed nothing).
  let run = 0;
  await fc.assert(
    fc.asyncProperty(name, name, async (first, second) => {
      run += 1;
      const read = await send(`${urls[0]}/plants/${id}`, { headers: HEADERS });
      const etag = read.headers.get('etag')!;
      const answers = await Promise.all(
        [first, second].map((value, i) =>
          send(`${urls[i]!}/plants/${id}`, {
            method: 'PATCH',
            headers: { ...HEADERS, 'if-match': etag },
            body: JSON.stringify({ name: `${value} ${run}.${i}` }),
          }),
        ),
      );
      expect(answers.map((answer) => answer.status).sort()).toEqual([200, 412]);
      const winner = answers.find((answer) => answer.status === 200)!;
      expect(winner.headers.get('etag')).not.toBe(etag);
      const after = await send(`${urls[1]}/plants/${id}`, { headers: HEADERS });
      expect(after.text).toBe(winner.text);
    }),
    { numRuns: RUNS },
  );
}

describe.each(testStores())('concurrent PATCHes with one If-Match on $name', (testStore) => {
  let api: RunningApi;
  apiOnStore(testStore, (running) => ({ api } = running));

  it(`let exactly one win, ${RUNS} times`, async () => {
    await race([api.url, api.url], 1);
  });
});

describe.runIf(postgresAvailable())(
  'concurrent PATCHes with one If-Match across two instances on postgres',
  () => {
    let store: TestStoreInstance;
    let apis: RunningApi[] = [];
    beforeAll(async () => {
      store = await postgresTestStore.setup();
      apis = [await startInProcess({ env: store.env }), await startInProcess({ env: store.env })];
    });
    afterAll(async () => {
      for (const api of apis) {
        await api.stop();
        api.cleanup();
      }
      await store?.teardown();
    });

    it(`let exactly one win, ${RUNS} times`, async () => {
      await race([apis[0]!.url, apis[1]!.url], 2);
    });
  },
);
