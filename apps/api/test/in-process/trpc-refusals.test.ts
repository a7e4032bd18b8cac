import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createTRPCClient, httpBatchLink, httpLink, TRPCClientError } from '@trpc/client';
import Koa from 'koa';
import pino from 'pino';
import superjson from 'superjson';
import { afterAll, describe, expect, it } from 'vitest';
import { errorMiddleware } from '../../src/http/error-middleware.ts';
import type { AppRouter } from '../../src/trpc/router.ts';
import { send, TOKEN } from '../support/http.ts';
import { type RunningApi, startInProcess } from '../support/in-process.ts';
import { sqliteTestStore, testStores } from '../support/stores.ts';

/**
 * What answers a /trpc request before the tRPC adapter (the limits, the error path, CORS) answers
 * in tRPC's error shape, so that tRPC clients read it: a typed client gets a `TRPCClientError`
 * with the code and the message, not "Unable to transform response from server".
 */

const started: { stop(): Promise<unknown>; cleanup(): void }[] = [];
afterAll(async () => {
  for (const api of started.reverse()) {
    await api.stop();
    api.cleanup();
  }
});

async function start(env: Record<string, string>, token?: string): Promise<RunningApi> {
  const api = await startInProcess({ env, ...(token !== undefined && { token }) });
  started.push(api);
  return api;
}

function trpcClient(url: string, token: string, batch: boolean) {
  const options = {
    url: `${url}/trpc`,
    transformer: superjson,
    headers: { authorization: `Bearer ${token}` },
  };
  return createTRPCClient<AppRouter>({ links: [batch ? httpBatchLink(options) : httpLink(options)] });
}

/** What a call that must fail rejected with: tRPC's error, with the status and headers of its answer. */
async function refusal(call: Promise<unknown>) {
  const error = await call.then(
    () => expect.unreachable('the call succeeded'),
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(TRPCClientError);
  const { data, message, meta } = error as TRPCClientError<AppRouter>;
  const response = meta?.response as Response | undefined;
  return {
    code: data?.code,
    httpStatus: data?.httpStatus,
    message,
    status: response?.status,
    retryAfter: response?.headers.get('retry-after'),
  };
}

describe.each(testStores())('refusals of /trpc requests before the tRPC adapter on $name', (testStore) => {
  it('answers the rate limit in tRPC’s shape, one call or a batch, with Retry-After', async () => {
    const store = await testStore.setup();
    started.push({ stop: () => store.teardown(), cleanup: () => {} });
    const api = await start({
      ...store.env,
      RATE_LIMIT_MAX: '3',
      RATE_LIMIT_WINDOW_SECONDS: '60',
      AUTH_FAILURE_MAX: '0',
    });
    const one = trpcClient(api.url, TOKEN, false);
    await one.plants.create.mutate({ id: 1n, name: 'Fern' });
    const batched = trpcClient(api.url, TOKEN, true);
    // Three calls in one request (queries: httpBatchLink sends mutations apart), two points left:
    // the batch is refused whole, each call with the same error.
    const calls = await Promise.all([
      refusal(batched.plants.get.query({ id: 1n })),
      refusal(batched.plants.list.query({})),
      refusal(batched.plants.get.query({ id: 2n })),
    ]);
    const limited = {
      code: 'TOO_MANY_REQUESTS',
      httpStatus: 429,
      message: expect.stringMatching(/^Too many requests: the limit is 3 per 60 s; retry in \d+ s\.$/),
      status: 429,
      retryAfter: expect.stringMatching(/^(59|60)$/),
    };
    expect(calls).toEqual([limited, limited, limited]);
    expect(await refusal(one.plants.get.query({ id: 1n }))).toEqual(limited);
    expect(await refusal(one.plants.create.mutate({ id: 3n, name: 'Fern' }))).toEqual(limited);
    expect(await store.ids()).toEqual([1n]);

    // The raw answer: tRPC's error envelope, REST's headers.
    const raw = await send(`${api.url}/trpc/plants.create`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify(superjson.serialize({ id: 4n, name: 'Fern' })),
    });
    expect(raw.status).toBe(429);
    expect(raw.headers.get('ratelimit-policy')).toBe('"default";q=3;w=60');
    expect(raw.json).toEqual({
      error: {
        json: {
          message: expect.stringMatching(/^Too many requests/),
          code: -32029,
          data: { code: 'TOO_MANY_REQUESTS', httpStatus: 429 },
        },
      },
    });
  });

  it('answers the failed-authentication limit in tRPC’s shape, with Retry-After', async () => {
    const store = await testStore.setup();
    started.push({ stop: () => store.teardown(), cleanup: () => {} });
    const api = await start({ ...store.env, AUTH_FAILURE_MAX: '2', RATE_LIMIT_WINDOW_SECONDS: '60' });
    const guess = (batch: boolean) => trpcClient(api.url, 'a-wrong-guess-0123456789', batch);
    const invalid = {
      code: 'UNAUTHORIZED',
      httpStatus: 401,
      message: 'The bearer token is not valid.',
      status: 401,
      retryAfter: null,
    };
    expect(await refusal(guess(false).plants.create.mutate({ id: 1n, name: 'Fern' }))).toEqual(invalid);
    expect(await refusal(guess(false).plants.get.query({ id: 1n }))).toEqual(invalid);
    const limited = {
      code: 'TOO_MANY_REQUESTS',
      httpStatus: 429,
      message: expect.stringMatching(
        /^Too many failed authentications from this address: the limit is 2 per 60 s; retry in \d+ s\.$/,
      ),
      status: 429,
      retryAfter: expect.stringMatching(/^\d+$/),
    };
    expect(await refusal(guess(false).plants.create.mutate({ id: 1n, name: 'Fern' }))).toEqual(limited);
    const batched = guess(true);
    expect(
      await Promise.all([
        refusal(batched.plants.create.mutate({ id: 1n, name: 'Fern' })),
        refusal(batched.plants.list.query({})),
      ]),
    ).toEqual([limited, limited]);
    // A valid token from the same address is still served.
    expect(await trpcClient(api.url, TOKEN, false).plants.list.query({})).toEqual({ plants: [], next: null });
    expect(await store.ids()).toEqual([]);
  });
});

describe('other answers before the tRPC adapter', () => {
  it('answers a failure of any middleware in tRPC’s shape under /trpc, as an Error body elsewhere', async () => {
    // The error path of the app, in front of a middleware that fails as a bug would.
    const app = new Koa();
    app.silent = true;
    app.use(errorMiddleware(pino({ level: 'silent' })));
    app.use(() => {
      throw new Error('SELECT * FROM secrets');
    });
    const server = createServer(app.callback()).listen(0, '127.0.0.1');
    await once(server, 'listening');
    started.push({ stop: () => new Promise((resolve) => server.close(resolve)), cleanup: () => {} });
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const internal = {
      code: 'INTERNAL_SERVER_ERROR',
      httpStatus: 500,
      message: 'Internal server error.',
      status: 500,
      retryAfter: null,
    };
    expect(await refusal(trpcClient(url, TOKEN, false).plants.create.mutate({ id: 1n, name: 'F' }))).toEqual(
      internal,
    );
    expect(await refusal(trpcClient(url, TOKEN, true).plants.list.query({}))).toEqual(internal);
    const rest = await send(`${url}/plants`);
    expect([rest.status, rest.text]).toEqual([500, '{"error":500,"message":"Internal server error."}']);
  });

  it('answers a CORS preflight for /trpc with CORS headers and no body, and any other OPTIONS in tRPC’s shape', async () => {
    const store = await sqliteTestStore.setup();
    started.push({ stop: () => store.teardown(), cleanup: () => {} });
    const api = await start({ ...store.env, CORS_ORIGINS: 'https://app.example' });
    const preflight = (origin: string) =>
      send(`${api.url}/trpc/plants.create`, {
        method: 'OPTIONS',
        headers: {
          origin,
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'authorization,content-type',
        },
      });
    const allowed = await preflight('https://app.example');
    expect([allowed.status, allowed.text]).toEqual([204, '']);
    expect(allowed.headers.get('access-control-allow-origin')).toBe('https://app.example');
    const other = await preflight('https://evil.example');
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
    // Not a preflight this server allows: tRPC's own handler answers it, in its shape.
    expect(other.status).toBe(415);
    expect(other.json).toEqual({
      error: {
        json: {
          message: expect.any(String),
          code: -32015,
          data: { code: 'UNSUPPORTED_MEDIA_TYPE', httpStatus: 415 },
        },
      },
    });
  });
});
