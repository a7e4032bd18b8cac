import { NewPlantSchema } from '@plant-store/schema';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postPlant } from './support/http.ts';
import { type InProcessApi, startInProcess } from './support/in-process.ts';

describe('the shared zod schemas', () => {
  let api: InProcessApi;
  beforeAll(async () => {
    api = await startInProcess();
  });
  afterAll(async () => {
    await api?.close();
  });

  it('are never mutated into coercing by serving REST requests or the document', async () => {
    expect((await postPlant(api.url, '{"id":1,"name":"Fern"}')).status).toBe(200);
    expect((await postPlant(api.url, '{"id":"12","name":"Fern"}')).status).toBe(400);
    expect((await fetch(`${api.url}/openapi.json`)).status).toBe(200);
    expect(NewPlantSchema.shape.id.safeParse('12').success).toBe(false);
    expect(NewPlantSchema.safeParse({ id: true, name: 'Fern' }).success).toBe(false);
    expect(await api.store.ids()).toEqual([1n]);
  });
});
