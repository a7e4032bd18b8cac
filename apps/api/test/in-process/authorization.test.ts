import { createTRPCClient, httpBatchLink, TRPCClientError } from '@trpc/client';
import superjson from 'superjson';
import { describe, expect, it } from 'vitest';
import type { AppRouter } from '../../src/trpc/router.ts';
import { apiOnStore } from '../support/api-on-store.ts';
import { errorBody, send } from '../support/http.ts';
import { type TestStoreInstance, testStores } from '../support/stores.ts';

const READER = 'reader-token';
const WRITER = 'writer-token';

describe.each(testStores())('scopes on $name', (testStore) => {
  let url: string;
  let store: TestStoreInstance;
  // Issued tokens, each with one scope (API_TOKENS always have both).
  apiOnStore(
    testStore,
    (running) => {
      url = running.api.url;
      store = running.store;
    },
    {
      tokens: [
        { name: 'reader', secret: READER, scopes: ['read'] },
        { name: 'writer', secret: WRITER, scopes: ['write'] },
      ],
    },
  );

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
    expect((await send(`${url}/plants/2`, { headers: as(READER) })).text).toMatch(
      /^\{"id":2,"name":"Fern","version":[0-9]+\}$/,
    );
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
    expect(await reader.plants.get.query({ id: 2n })).toEqual({
      id: 2n,
      name: 'Fern',
      version: expect.any(BigInt),
    });
    expect(await store.ids()).toEqual([2n]);
  });
});
