import { createTRPCClient, httpBatchLink, httpLink, TRPCClientError } from '@trpc/client';
import superjson from 'superjson';
import { describe, expect, it } from 'vitest';
import type { AppRouter } from '../../src/trpc/router.ts';
import { apiOnStore } from '../support/api-on-store.ts';
import type { RunningApi } from '../support/in-process.ts';
import { postPlant, send, TOKEN } from '../support/http.ts';
import { EDGE_IDS } from '../support/ids.ts';
import { type TestStoreInstance, testStores } from '../support/stores.ts';

function client(url: string, token: string | undefined, batch = true) {
  const options = {
    url: `${url}/trpc`,
    transformer: superjson,
    headers: () => (token === undefined ? {} : { authorization: `Bearer ${token}` }),
  };
  return createTRPCClient<AppRouter>({ links: [batch ? httpBatchLink(options) : httpLink(options)] });
}

async function rejection(promise: Promise<unknown>): Promise<TRPCClientError<AppRouter>> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof TRPCClientError)) throw new Error(`expected a TRPCClientError, got ${error}`);
  return error as TRPCClientError<AppRouter>;
}

describe.each(testStores())('REST and tRPC share one contract on $name', (testStore) => {
  let store: TestStoreInstance;
  let api: RunningApi;

  apiOnStore(testStore, (running) => ({ api, store } = running));

  it('creates over tRPC with exact int64 ids, batched and not', async () => {
    const batched = client(api.url, TOKEN);
    const answers = await Promise.all(
      EDGE_IDS.map((id) => batched.plants.create.mutate({ id, name: 'Fern', tag: 'herb' })),
    );
    expect(answers).toEqual(EDGE_IDS.map(() => ({ name: 'Fern', tag: 'herb' })));
    expect(await client(api.url, TOKEN, false).plants.create.mutate({ id: 5n, name: 'Moss' })).toEqual({
      name: 'Moss',
    });
    expect(await store.ids()).toEqual([EDGE_IDS[0], 5n, ...EDGE_IDS.slice(1)]);
  });

  it('sees plants created over REST and vice versa (409 / CONFLICT)', async () => {
    expect((await postPlant(api.url, '{"id":424242,"name":"Fern"}')).status).toBe(200);
    const conflict = await rejection(
      client(api.url, TOKEN).plants.create.mutate({ id: 424242n, name: 'Fern' }),
    );
    expect(conflict.data?.code).toBe('CONFLICT');
    expect(conflict.data?.httpStatus).toBe(409);
    expect(conflict.message).toBe('A plant with id 424242 already exists.');

    await client(api.url, TOKEN).plants.create.mutate({ id: 434343n, name: 'Fern' });
    const rest = await postPlant(api.url, '{"id":434343,"name":"Fern"}');
    expect(rest.status).toBe(409);
    expect(rest.json).toEqual({ error: 409, message: conflict.message.replace('424242', '434343') });
  });

  it('rejects bad input with the same message as REST, without coercion', async () => {
    const trpcError = await rejection(
      client(api.url, TOKEN).plants.create.mutate({ id: '12', name: 'Fern' } as never),
    );
    const rest = await postPlant(api.url, '{"id":"12","name":"Fern"}');
    expect(trpcError.data?.httpStatus).toBe(400);
    expect(trpcError.message).toBe((rest.json as { message: string }).message);
    expect(trpcError.data).not.toHaveProperty('stack');
    expect(await store.ids()).not.toContain(12n);
  });

  it('refuses a name or tag over its length with the same message as REST', async () => {
    const trpc = client(api.url, TOKEN);
    const name = await rejection(trpc.plants.create.mutate({ id: 88n, name: 'x'.repeat(201) }));
    expect(name.data?.httpStatus).toBe(400);
    expect(name.data?.code).toBe('BAD_REQUEST');
    expect(name.message).toBe('Invalid request body: name must be at most 200 characters.');
    const tag = await rejection(trpc.plants.create.mutate({ id: 88n, name: 'Fern', tag: 'y'.repeat(101) }));
    const rest = await postPlant(api.url, `{"id":88,"name":"Fern","tag":"${'y'.repeat(101)}"}`);
    expect(rest.status).toBe(400);
    expect(rest.json).toEqual({ error: 400, message: tag.message });
    expect(tag.message).toBe('Invalid request body: tag must be at most 100 characters.');
    expect(await store.ids()).not.toContain(88n);
  });

  it('answers each call of a mixed batch on its own (one 200, one 409, one 400)', async () => {
    const batched = client(api.url, TOKEN);
    await batched.plants.create.mutate({ id: 515151n, name: 'Fern' });
    const [fresh, duplicate, invalid] = await Promise.allSettled([
      batched.plants.create.mutate({ id: 525252n, name: 'Fern' }),
      batched.plants.create.mutate({ id: 515151n, name: 'Fern' }),
      batched.plants.create.mutate({ id: 1n, name: 42 } as never),
    ]);
    expect(fresh).toEqual({ status: 'fulfilled', value: { name: 'Fern' } });
    expect((duplicate as PromiseRejectedResult).reason.data.httpStatus).toBe(409);
    expect((invalid as PromiseRejectedResult).reason.message).toBe(
      'Invalid request body: name must be a string.',
    );
    const ids = await store.ids();
    expect(ids).toContain(525252n);
    expect(ids).not.toContain(1n);
  });

  it('answers unknown procedures and malformed bodies with tRPC errors', async () => {
    const unknown = await fetch(`${api.url}/trpc/plants.nope`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(unknown.status).toBe(404);
    expect(
      ((await unknown.json()) as { error: { json: { data: { code: string } } } }).error.json.data.code,
    ).toBe('NOT_FOUND');
    const malformed = await fetch(`${api.url}/trpc/plants.create`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: '{"json":',
    });
    expect(malformed.status).toBe(400);
    const body = (await malformed.json()) as {
      error: { json: { message: string; data: Record<string, unknown> } };
    };
    expect(body.error.json.data.code).toBe('PARSE_ERROR');
    expect(body.error.json.data).not.toHaveProperty('stack');
  });

  it('lists, reads and deletes over tRPC with exact ids', async () => {
    const trpc = client(api.url, TOKEN);
    await trpc.plants.create.mutate({ id: 2n ** 63n - 2n, name: 'Last', tag: 'x' });
    expect(await trpc.plants.get.query({ id: 2n ** 63n - 2n })).toEqual({
      id: 2n ** 63n - 2n,
      name: 'Last',
      tag: 'x',
      version: expect.any(BigInt),
    });
    const page = await trpc.plants.list.query({ limit: 2 });
    expect(page.plants.map((plant) => plant.id)).toEqual((await store.ids()).slice(0, 2));
    expect(page.next).toBe(page.plants[1]!.id);
    const last = await trpc.plants.list.query({ after: 2n ** 63n - 3n });
    expect(last).toEqual({
      plants: [
        { id: 2n ** 63n - 2n, name: 'Last', tag: 'x', version: expect.any(BigInt) },
        expect.anything(),
      ],
      next: null,
    });
    expect(await trpc.plants.delete.mutate({ id: 2n ** 63n - 2n })).toBeUndefined();
    const gone = await rejection(trpc.plants.get.query({ id: 2n ** 63n - 2n }));
    expect(gone.data?.httpStatus).toBe(404);
    const again = await rejection(trpc.plants.delete.mutate({ id: 2n ** 63n - 2n }));
    expect(again.message).toBe(`There is no plant with id ${2n ** 63n - 2n}.`);
  });

  it('requires the bearer token over tRPC too', async () => {
    const missing = await rejection(
      client(api.url, undefined).plants.create.mutate({ id: 77n, name: 'Fern' }),
    );
    expect(missing.data?.httpStatus).toBe(401);
    const wrong = await rejection(client(api.url, 'wrong').plants.create.mutate({ id: 77n, name: 'Fern' }));
    expect(wrong.data?.httpStatus).toBe(401);
    expect(wrong.message).toBe('The bearer token is not valid.');
    expect(await store.ids()).not.toContain(77n);
  });
});

/** A token with every scope but the one an operation needs. */
const LACKS = {
  write: { name: 'reader', secret: 'reader-token-0123456789', scopes: ['read', 'webhooks'] },
  webhooks: { name: 'plain', secret: 'plain-token-0123456789', scopes: ['read', 'write'] },
} as const;

/** One combination of faults: a token lacking the scope, the key (none wrong, malformed, reused), the input. */
type Faults = { scope: boolean; key: 'fresh' | 'malformed' | 'reused'; body: boolean };

const FAULTS: Faults[] = [false, true].flatMap((scope) =>
  (['fresh', 'malformed', 'reused'] as const).flatMap((key) =>
    [false, true].map((body) => ({ scope, key, body })),
  ),
);

function named({ scope, key, body }: Faults): string {
  const parts = [scope && 'missing scope', key !== 'fresh' && `${key} key`, body && 'bad body'];
  return parts.filter(Boolean).join(' + ') || 'no fault';
}

/** What a client is told: the status and message of a refusal, or `ok`; tRPC's code too. */
type Told = { status: number; message: string; code?: string };

/**
 * A mutation under test, over both transports. `prepare(n, bad, transport)` sets up what call
 * `n` acts on (a plant to delete) and returns its REST request and tRPC input, a bad one if `bad`.
 */
type Subject = {
  path: 'plants.create' | 'plants.delete' | 'webhookEndpoints.create';
  scope: keyof typeof LACKS;
  keyed: boolean;
  prepare(
    n: number,
    bad: boolean,
  ): Promise<{ rest: { method: string; path: string; body?: string }; trpc: unknown }>;
};

describe.each(testStores())(
  'REST and tRPC refuse the same faults alike, in every combination, on $name',
  (testStore) => {
    let api: RunningApi;
    let next = 0;
    /** Unique per request: plant ids and keys never meet across cases and transports. */
    const fresh = () => ++next + 7_000_000;

    apiOnStore(testStore, (running) => ({ api } = running), {
      env: {
        WEBHOOK_ALLOW_PRIVATE_URLS: '1',
        WEBHOOK_ENDPOINTS_PER_TOKEN: '1000',
        ...(testStore.name === 'postgres' && { WEBHOOK_SECRETS_KEY: Buffer.alloc(32, 7).toString('base64') }),
      },
      tokens: Object.values(LACKS),
    });

    const create = async (id: number) => {
      expect((await postPlant(api.url, `{"id":${id},"name":"Fern"}`)).status).toBe(200);
    };

    const SUBJECTS: Subject[] = [
      {
        path: 'plants.create',
        scope: 'write',
        keyed: true,
        async prepare(n, bad) {
          const body = bad ? { id: n, name: 42 } : { id: n, name: 'Fern' };
          return {
            rest: { method: 'POST', path: '/plants', body: JSON.stringify(body) },
            trpc: { ...body, id: BigInt(n) },
          };
        },
      },
      {
        path: 'plants.delete',
        scope: 'write',
        keyed: true,
        async prepare(n, bad) {
          if (bad)
            return { rest: { method: 'DELETE', path: '/plants/not-an-id' }, trpc: { id: 'not-an-id' } };
          await create(n);
          return { rest: { method: 'DELETE', path: `/plants/${n}` }, trpc: { id: BigInt(n) } };
        },
      },
      {
        path: 'webhookEndpoints.create',
        scope: 'webhooks',
        keyed: false,
        async prepare(n, bad) {
          const body = { url: bad ? n : `http://127.0.0.1:9/hook-${n}` };
          return {
            rest: { method: 'POST', path: '/webhook-endpoints', body: JSON.stringify(body) },
            trpc: body,
          };
        },
      },
    ];

    async function overRest(
      request: { method: string; path: string; body?: string },
      token: string,
      key?: string,
    ) {
      const answer = await send(`${api.url}${request.path}`, {
        method: request.method,
        headers: {
          authorization: `Bearer ${token}`,
          ...(request.body !== undefined && { 'content-type': 'application/json' }),
          ...(key !== undefined && { 'idempotency-key': key }),
        },
        body: request.body,
      });
      if (answer.status < 300) return { status: 200, message: 'ok' };
      return { status: answer.status, message: (answer.json as { message: string }).message };
    }

    async function overTrpc(
      path: Subject['path'],
      input: unknown,
      token: string,
      key?: string,
    ): Promise<Told> {
      const trpc = createTRPCClient<AppRouter>({
        links: [
          httpLink({
            url: `${api.url}/trpc`,
            transformer: superjson,
            headers: {
              authorization: `Bearer ${token}`,
              ...(key !== undefined && { 'idempotency-key': key }),
            },
          }),
        ],
      });
      const [namespace, name] = path.split('.') as ['plants', 'create'];
      try {
        await (trpc[namespace][name].mutate as (input: unknown) => Promise<unknown>)(input);
        return { status: 200, message: 'ok' };
      } catch (error) {
        if (!(error instanceof TRPCClientError)) throw error;
        return { status: error.data?.httpStatus, message: error.message, code: error.data?.code };
      }
    }

    /** What the pipeline's order (authorize, key, input, claim) says the client is told. */
    function expected(subject: Subject, faults: Faults): Omit<Told, 'code'> {
      if (faults.scope)
        return { status: 403, message: `This token lacks the ${subject.scope} scope this operation needs.` };
      if (subject.keyed && faults.key === 'malformed')
        return {
          status: 400,
          message:
            'The Idempotency-Key header must be a string of 1 to 255 printable ASCII characters, such as "8e03978e-40d5-43e8-bc93-6894a57f9324".',
        };
      if (faults.body) return { status: 400, message: BAD_INPUT[subject.path] };
      if (subject.keyed && faults.key === 'reused')
        return {
          status: 422,
          message:
            'This Idempotency-Key was used for a different request; send a new key with a new request.',
        };
      return { status: 200, message: 'ok' };
    }

    const BAD_INPUT: Record<Subject['path'], string> = {
      'plants.create': 'Invalid request body: name must be a string.',
      'plants.delete':
        'Invalid request parameters: id must be an integer from -9223372036854775808 to 9223372036854775807.',
      'webhookEndpoints.create': 'Invalid request body: url must be a string.',
    };

    const CODES: Record<number, string> = {
      400: 'BAD_REQUEST',
      403: 'FORBIDDEN',
      422: 'UNPROCESSABLE_CONTENT',
    };

    describe.each(SUBJECTS.map((subject) => [subject.path, subject] as const))('%s', (_, subject) => {
      it.each(FAULTS.map((faults) => [named(faults), faults] as const))('%s', async (_, faults) => {
        const token = faults.scope ? LACKS[subject.scope].secret : TOKEN;
        const told: Told[] = [];
        for (const transport of ['rest', 'trpc'] as const) {
          const key = faults.key === 'malformed' ? 'two words' : `key-${transport}-${fresh()}`;
          if (faults.key === 'reused') {
            // The key's first use: another call, which succeeds.
            const first = await subject.prepare(fresh(), false);
            const firstTold =
              transport === 'rest'
                ? await overRest(first.rest, TOKEN, key)
                : await overTrpc(subject.path, first.trpc, TOKEN, key);
            expect(firstTold).toEqual({ status: 200, message: 'ok' });
          }
          const call = await subject.prepare(fresh(), faults.body);
          told.push(
            transport === 'rest'
              ? await overRest(call.rest, token, key)
              : await overTrpc(subject.path, call.trpc, token, key),
          );
        }
        const [rest, trpc] = told as [Told, Told];
        expect(rest).toEqual(expected(subject, faults));
        expect({ status: trpc.status, message: trpc.message }).toEqual(rest);
        if (rest.status !== 200) expect(trpc.code).toBe(CODES[rest.status]);
      });
    });
  },
);
