import { NewPlantSchema } from '@plant-store/schema';
import { describe, expect, it } from 'vitest';
import { apiOnStore } from '../support/api-on-store.ts';
import { postPlant } from '../support/http.ts';
import type { RunningApi } from '../support/in-process.ts';
import { type TestStoreInstance, testStores } from '../support/stores.ts';

describe.each(testStores())('the shared zod schemas, serving on $name', (testStore) => {
  let api: RunningApi;
  let store: TestStoreInstance;
  apiOnStore(testStore, (running) => ({ api, store } = running));

  it('are never mutated into coercing by serving REST requests or the document', async () => {
    expect((await postPlant(api.url, '{"id":1,"name":"Fern"}')).status).toBe(200);
    expect((await postPlant(api.url, '{"id":"12","name":"Fern"}')).status).toBe(400);
    expect((await fetch(`${api.url}/openapi.json`)).status).toBe(200);
    expect(NewPlantSchema.shape.id.safeParse('12').success).toBe(false);
    expect(NewPlantSchema.safeParse({ id: true, name: 'Fern' }).success).toBe(false);
    expect(await store.ids()).toEqual([1n]);
  });
});
