import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createTRPCClient, httpBatchLink, TRPCClientError } from '@trpc/client';
import pino from 'pino';
import superjson from 'superjson';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../src/app.ts';
import type { AppRouter } from '../src/router.ts';
import { openSqliteStore } from '../src/store/sqlite.ts';
import { errorBody, send } from './support/http.ts';
import { sqliteTestStore, type TestStoreInstance } from './support/stores.ts';

const READER = 'reader-token';
const WRITER = 'writer-token';

describe('scopes', () => {
  let store: TestStoreInstance;
  let server: Server;
  let url: string;
  let close: () => Promise<void>;

  beforeAll(async () => {
    store = await sqliteTestStore.setup();
    const plants = openSqliteStore(store.env.DATABASE_URL!.slice('file:'.length));
    const app = createApp({
      store: plants,
      tokens: [
        { name: 'reader', secret: READER, scopes: ['read'] },
        { name: 'writer', secret: WRITER, scopes: ['write'] },
      ],
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

  const as = (token: string) => ({ authorization: `Bearer ${token}`, 'content-type': 'application/json' });

  it('lets a write token create and delete but not read (403)', async () => {
    expect(
      (await send(`${url}/plants`, { method: 'POST', headers: as(WRITER), body: '{"id":1,"name":"Fern"}' }))
        .status,
    ).toBe(200);
    const list = await send(`${url}/plants`, { headers: as(WRITER) });
    expect(list.status).toBe(403);
    expect(list.text).toBe(errorBody(403, 'This token lacks the read scope this operation needs.'));
    expect((await send(`${url}/plants/1`, { headers: as(WRITER) })).status).toBe(403);
    expect((await send(`${url}/plants/1`, { method: 'DELETE', headers: as(WRITER) })).status).toBe(204);
  });

  it('lets a read token list and read but not create or delete (403), and stores nothing', async () => {
    expect(
      (await send(`${url}/plants`, { method: 'POST', headers: as(WRITER), body: '{"id":2,"name":"Fern"}' }))
        .status,
    ).toBe(200);
    expect((await send(`${url}/plants/2`, { headers: as(READER) })).text).toBe('{"id":2,"name":"Fern"}');
    const create = await send(`${url}/plants`, {
      method: 'POST',
      headers: as(READER),
      body: '{"id":3,"name":"Fern"}',
    });
    expect(create.status).toBe(403);
    expect(create.text).toBe(errorBody(403, 'This token lacks the write scope this operation needs.'));
    expect((await send(`${url}/plants/2`, { method: 'DELETE', headers: as(READER) })).status).toBe(403);
    expect(await store.ids()).toEqual([2n]);
  });

  it('checks the scope before reading the body', async () => {
    const answer = await send(`${url}/plants`, { method: 'POST', headers: as(READER), body: '{not json' });
    expect(answer.status).toBe(403);
  });

  it('answers FORBIDDEN (403) over tRPC too', async () => {
    const reader = createTRPCClient<AppRouter>({
      links: [
        httpBatchLink({
          url: `${url}/trpc`,
          transformer: superjson,
          headers: { authorization: `Bearer ${READER}` },
        }),
      ],
    });
    const error = await reader.plants.create.mutate({ id: 4n, name: 'Fern' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TRPCClientError);
    expect((error as TRPCClientError<AppRouter>).data?.httpStatus).toBe(403);
    expect(await reader.plants.get.query({ id: 2n })).toEqual({ id: 2n, name: 'Fern' });
    expect(await store.ids()).toEqual([2n]);
  });
});
