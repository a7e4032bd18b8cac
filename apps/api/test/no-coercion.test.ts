import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { NewPlantSchema } from '@plant-store/schema';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../src/app.ts';
import { openSqliteStore } from '../src/store/sqlite.ts';
import { postPlant } from './support/http.ts';
import { type TestStoreInstance, sqliteTestStore } from './support/stores.ts';

describe('the shared zod schemas', () => {
  let store: TestStoreInstance;
  let server: Server;
  let url: string;
  let close: () => Promise<void>;

  beforeAll(async () => {
    store = await sqliteTestStore.setup();
    const plants = openSqliteStore(store.env.DATABASE_URL!.slice('file:'.length));
    const app = createApp({
      store: plants,
      tokens: [{ name: 'test', secret: 'test-token', scopes: ['read', 'write'] }],
      log: pino({ level: 'silent' }),
      publicUrl: 'http://127.0.0.1',
    });
    server = createServer(app.callback()).listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    close = async () => {
      await new Promise((resolve) => server.close(resolve));
      await plants.close();
    };
  });
  afterAll(async () => {
    await close?.();
    await store?.teardown();
  });

  it('are never mutated into coercing by serving REST requests or the document', async () => {
    expect((await postPlant(url, '{"id":1,"name":"Fern"}')).status).toBe(200);
    expect((await postPlant(url, '{"id":"12","name":"Fern"}')).status).toBe(400);
    expect((await fetch(`${url}/openapi.json`)).status).toBe(200);
    expect(NewPlantSchema.shape.id.safeParse('12').success).toBe(false);
    expect(NewPlantSchema.safeParse({ id: true, name: 'Fern' }).success).toBe(false);
    expect(await store.ids()).toEqual([1n]);
  });
});
