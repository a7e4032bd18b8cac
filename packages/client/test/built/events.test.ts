import { type ApiProcess, startApiProcess } from '@plant-store/api/testing';
import { afterEach, describe, expect, it } from 'vitest';
import {
  createRestClient,
  createTrpcClient,
  type PlantEvent,
  type PlantEventType,
  PlantStoreError,
} from '../../src/index.ts';
import { failureOf } from '../support/clients.ts';
import { collect, portOf, shape } from '../support/events.ts';

const TOKEN = 'events-test-token-0123456789';
const INT64_MAX = 9223372036854775807n;

const started: ApiProcess[] = [];
async function start(options: Parameters<typeof startApiProcess>[0] = {}): Promise<ApiProcess> {
  const api = await startApiProcess({ token: TOKEN, ...options });
  started.push(api);
  return api;
}
afterEach(async () => {
  // SIGKILL: a graceful stop would wait for the idle connection undici opens after an abort.
  for (const api of started.splice(0)) {
    await api.kill();
    api.cleanup();
  }
});

/**
 * An api that allows one event stream per token, with that one stream open (over REST) and past
 * its first event, a plant named 'Held' with id 1: the next stream for the token gets 429.
 */
async function holdTheOnlyStream() {
  const api = await start({ env: { EVENT_STREAMS_PER_TOKEN: '1' } });
  const rest = createRestClient({ baseUrl: api.url, token: TOKEN });
  const first = new AbortController();
  const holder = collect(rest.events({ after: 0n, signal: first.signal }), () => first.abort());
  await rest.createPlant({ id: 1n, name: 'Held' });
  await holder.until(1);
  return { api, rest, holder };
}

const created = (id: bigint, name: string) => ({ type: 'plant.created', plant: { id, name } });
const deleted = (id: bigint) => ({ type: 'plant.deleted', plant: { id } });

describe('REST client: events', () => {
  it('delivers creates and deletes in commit order, ids exact, event ids increasing', async () => {
    const api = await start();
    const rest = createRestClient({ baseUrl: api.url, token: TOKEN });
    const stop = new AbortController();
    const events = collect(rest.events({ after: 0n, signal: stop.signal }), () => stop.abort());
    await rest.createPlant({ id: 1n, name: 'Opener' });
    await events.until(1);
    await rest.createPlant({ id: 9007199254740993n, name: 'Fern', tag: 'herb' });
    await rest.deletePlant(9007199254740993n);
    await rest.createPlant({ id: INT64_MAX, name: 'Max' });
    const got = await events.until(4);
    expect(got.map(shape)).toStrictEqual([
      created(1n, 'Opener'),
      { type: 'plant.created', plant: { id: 9007199254740993n, name: 'Fern', tag: 'herb' } },
      deleted(9007199254740993n),
      created(INT64_MAX, 'Max'),
    ]);
    const ids = got.map(({ id }) => id);
    expect(ids.every((id, i) => typeof id === 'bigint' && (i === 0 || id > ids[i - 1]!))).toBe(true);
    expect(got.every(({ createdAt }) => !Number.isNaN(Date.parse(createdAt)))).toBe(true);
    await events.stop();

    // `after` replays what followed that id, from the log.
    const replay = new AbortController();
    const again = collect(rest.events({ after: ids[1], signal: replay.signal }), () => replay.abort());
    expect(await again.until(2)).toStrictEqual(got.slice(2));
    await again.stop();
  });

  it.each([
    ['a SIGKILL', (api: ApiProcess) => api.kill()],
    ['a graceful stop (SIGTERM: the stream ends cleanly)', (api: ApiProcess) => api.stop()],
  ])(
    'resumes across %s and a restart on the same file: every committed event once, in order',
    async (_, end) => {
      let api = await start();
      const { dataDir, url } = api;
      const rest = createRestClient({ baseUrl: url, token: TOKEN });
      const reconnects: number[] = [];
      const stop = new AbortController();
      const events = collect(
        rest.events({
          after: 0n,
          signal: stop.signal,
          onReconnect: ({ error }) => reconnects.push(error.status),
        }),
        () => stop.abort(),
      );
      await rest.createPlant({ id: 1n, name: 'Before' });
      await events.until(1);
      // Committed, then the process dies at once: whether or not it went out, it must arrive once.
      await rest.createPlant({ id: 2n, name: 'Just before the kill' });
      await end(api);
      api = await start({ dataDir, env: { PORT: portOf(url) } });
      await rest.createPlant({ id: 3n, name: 'After the restart' });
      await rest.deletePlant(1n);
      await events.until(4);
      await rest.createPlant({ id: 4n, name: 'Live again' });
      const got = await events.until(5);
      expect(got.map(shape)).toStrictEqual([
        created(1n, 'Before'),
        created(2n, 'Just before the kill'),
        created(3n, 'After the restart'),
        deleted(1n),
        created(4n, 'Live again'),
      ]);
      expect(new Set(got.map(({ id }) => id)).size).toBe(5);
      expect(reconnects.length).toBeGreaterThan(0);
      // Nothing more: no repeat arrives later.
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(events.items).toHaveLength(5);
      await events.stop();
    },
  );

  it('waits as Retry-After says on 429 (too many streams for this token), then connects', async () => {
    const { rest, holder } = await holdTheOnlyStream();
    const waits: { status: number; delayMs: number }[] = [];
    const second = new AbortController();
    const waiting = collect(
      rest.events({
        after: 0n,
        signal: second.signal,
        onReconnect: ({ error, delayMs }) => waits.push({ status: error.status, delayMs }),
      }),
      () => second.abort(),
    );
    while (waits.length === 0) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(waits[0]).toStrictEqual({ status: 429, delayMs: 1000 });
    await holder.stop();
    expect((await waiting.until(1)).map(shape)).toStrictEqual([created(1n, 'Held')]);
    await waiting.stop();
  });

  it('delivers only the types asked for, and resumes them after a restart without a gap or a repeat', async () => {
    let api = await start();
    const { dataDir, url } = api;
    const rest = createRestClient({ baseUrl: url, token: TOKEN });
    const stop = new AbortController();
    const reconnects: number[] = [];
    const deletes = collect(
      rest.events({
        after: 0n,
        types: ['plant.deleted'],
        signal: stop.signal,
        onReconnect: ({ error }) => reconnects.push(error.status),
      }),
      () => stop.abort(),
    );
    const every = new AbortController();
    const all = collect(rest.events({ after: 0n, signal: every.signal }), () => every.abort());
    for (const id of [1n, 2n, 3n]) await rest.createPlant({ id, name: 'Fern' });
    await rest.deletePlant(1n);
    await deletes.until(1);
    await rest.deletePlant(2n);
    await api.kill();
    api = await start({ dataDir, env: { PORT: portOf(url) } });
    await rest.createPlant({ id: 4n, name: 'After the restart' });
    await rest.deletePlant(3n);
    const got = await deletes.until(3);
    expect(got.map(shape)).toStrictEqual([deleted(1n), deleted(2n), deleted(3n)]);
    expect(reconnects.length).toBeGreaterThan(0);
    // The log's own ids: those the unfiltered stream got for the same events.
    const log = await all.until(7);
    expect(got).toStrictEqual(log.filter((event) => event.type === 'plant.deleted'));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(deletes.items).toHaveLength(3);
    await deletes.stop();
    await all.stop();
  });

  it('fails with the server message (400) on a type the server does not know, without retrying', async () => {
    const api = await start();
    const rest = createRestClient({ baseUrl: api.url, token: TOKEN });
    const types = ['plant.moved'] as unknown as ['plant.created'];
    expect(await failureOf(rest.events({ types })[Symbol.asyncIterator]().next())).toMatchObject({
      status: 400,
      url: `${api.url}/plants/events?types=plant.moved`,
      serverMessage:
        'Invalid request parameters: types.0 must be one of the event types plant.created, plant.updated, ' +
        'plant.deleted (not "plant.moved").',
    });
  });

  it('ends cleanly when the consumer breaks out, and closes its stream', async () => {
    const api = await start();
    const rest = createRestClient({ baseUrl: api.url, token: TOKEN });
    await rest.createPlant({ id: 7n, name: 'Only' });
    const seen: PlantEvent[] = [];
    for await (const event of rest.events({ after: 0n })) {
      seen.push(event);
      break;
    }
    expect(seen.map(shape)).toStrictEqual([created(7n, 'Only')]);
  });

  it('fails with a typed error on 401 and on 410 (events no longer kept), without retrying', async () => {
    const api = await start({ env: { EVENTS_RETENTION_MS: '1000' } });
    const rest = createRestClient({ baseUrl: api.url, token: TOKEN });
    const wrong = createRestClient({ baseUrl: api.url, token: 'not-a-token' });
    expect(await failureOf(wrong.events()[Symbol.asyncIterator]().next())).toMatchObject({
      status: 401,
      error: 401,
      method: 'GET',
      url: `${api.url}/plants/events`,
    });
    await rest.createPlant({ id: 1n, name: 'Soon pruned' });
    const deadline = Date.now() + 10_000;
    while (!api.logs.some((line) => line.includes('"msg":"events pruned"')) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(await failureOf(rest.events({ after: 0n })[Symbol.asyncIterator]().next())).toMatchObject({
      status: 410,
      error: 410,
      serverMessage:
        'The events after 0 are no longer kept (see EVENTS_RETENTION_MS); start again without a resume id.',
    });
  });
});

describe('tRPC client: plants.events', () => {
  /** Subscribes with callbacks; `stop()` unsubscribes. */
  function subscribe(
    client: ReturnType<typeof createTrpcClient>,
    input: { after?: bigint; types?: PlantEventType[] },
  ) {
    const items: PlantEvent[] = [];
    const errors: unknown[] = [];
    const subscription = client.plants.events.subscribe(input, {
      onData: ({ data }) => items.push(data),
      onError: (error) => errors.push(error),
    });
    const stream = collectPushed(items, errors);
    return { ...stream, stop: () => subscription.unsubscribe() };
  }

  it('delivers events with bigint ids as tracked data', async () => {
    const api = await start();
    const client = createTrpcClient({ baseUrl: api.url, token: TOKEN });
    const events = subscribe(client, { after: 0n });
    await client.plants.create.mutate({ id: 9007199254740993n, name: 'Fern', tag: 'herb' });
    await client.plants.delete.mutate({ id: 9007199254740993n });
    const got = await events.until(2);
    expect(got.map(shape)).toStrictEqual([
      { type: 'plant.created', plant: { id: 9007199254740993n, name: 'Fern', tag: 'herb' } },
      deleted(9007199254740993n),
    ]);
    expect(typeof got[0]!.id).toBe('bigint');
    expect(got[1]!.id).toBeGreaterThan(got[0]!.id);
    events.stop();
  });

  it('delivers only the types asked for (input types), and reports an unknown one as a 400', async () => {
    const api = await start();
    const client = createTrpcClient({ baseUrl: api.url, token: TOKEN });
    const creates = subscribe(client, { after: 0n, types: ['plant.created'] });
    await client.plants.create.mutate({ id: 1n, name: 'Fern' });
    await client.plants.delete.mutate({ id: 1n });
    await client.plants.create.mutate({ id: 2n, name: 'Moss' });
    expect((await creates.until(2)).map(shape)).toStrictEqual([created(1n, 'Fern'), created(2n, 'Moss')]);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(creates.items).toHaveLength(2);
    creates.stop();
    const wrong = subscribe(client, { types: ['plant.moved'] as unknown as ['plant.created'] });
    expect(await wrong.failed()).toMatchObject({
      status: 400,
      serverMessage:
        'Invalid request parameters: types.0 must be one of the event types plant.created, plant.updated, ' +
        'plant.deleted (not "plant.moved").',
    });
    wrong.stop();
  });

  it('resumes with lastEventId after the connection is cut: no gap, no repeat', async () => {
    let api = await start();
    const { dataDir, url } = api;
    const client = createTrpcClient({ baseUrl: url, token: TOKEN });
    const events = subscribe(client, { after: 0n });
    await client.plants.create.mutate({ id: 1n, name: 'Before' });
    await events.until(1);
    await client.plants.create.mutate({ id: 2n, name: 'Just before the kill' });
    await api.kill();
    api = await start({ dataDir, env: { PORT: portOf(url) } });
    await client.plants.create.mutate({ id: 3n, name: 'After the restart' });
    await events.until(3);
    await client.plants.create.mutate({ id: 4n, name: 'Live again' });
    const got = await events.until(4);
    expect(got.map(shape)).toStrictEqual([
      created(1n, 'Before'),
      created(2n, 'Just before the kill'),
      created(3n, 'After the restart'),
      created(4n, 'Live again'),
    ]);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(events.items).toHaveLength(4);
    events.stop();
  });

  it('resubscribes while the token has too many streams open (429), then delivers', async () => {
    const { api, holder } = await holdTheOnlyStream();
    const events = subscribe(createTrpcClient({ baseUrl: api.url, token: TOKEN }), { after: 0n });
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(events.items).toHaveLength(0);
    await holder.stop();
    expect((await events.until(1)).map(shape)).toStrictEqual([created(1n, 'Held')]);
    events.stop();
  });

  it("resubscribes after an answer other than 200 that is worth retrying (a proxy's 502)", async () => {
    const api = await start();
    let refused = 0;
    // The first two subscription requests meet a failing proxy; EventSource alone gives up on them.
    const flaky: typeof fetch = (input, init) => {
      if (String(input).includes('/trpc/plants.events') && refused < 2) {
        refused++;
        return Promise.resolve(new Response('Bad Gateway', { status: 502 }));
      }
      return fetch(input, init);
    };
    const client = createTrpcClient({ baseUrl: api.url, token: TOKEN, fetch: flaky });
    const events = subscribe(client, { after: 0n });
    await client.plants.create.mutate({ id: 1n, name: 'Through' });
    expect((await events.until(1)).map(shape)).toStrictEqual([created(1n, 'Through')]);
    expect(refused).toBe(2);
    events.stop();
  });

  it('reports a resume id older than the retention to onError, once, without retrying', async () => {
    const api = await start({ env: { EVENTS_RETENTION_MS: '1000' } });
    const client = createTrpcClient({ baseUrl: api.url, token: TOKEN });
    await client.plants.create.mutate({ id: 1n, name: 'Soon pruned' });
    const deadline = Date.now() + 10_000;
    while (!api.logs.some((line) => line.includes('"msg":"events pruned"')) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const events = subscribe(client, { after: 0n });
    const error = await events.failed();
    expect(error).toBeInstanceOf(PlantStoreError);
    // tRPC has no 410: the server answers NOT_FOUND (404) with the message saying why.
    expect(error).toMatchObject({
      status: 404,
      serverMessage:
        'The events after 0 are no longer kept (see EVENTS_RETENTION_MS); start again without a resume id.',
    });
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const subscriptions = api.logs.filter((line) => line.includes('"route":"/trpc/plants.events"'));
    expect(subscriptions).toHaveLength(1);
    events.stop();
  });

  it('reports a wrong token to onError as a PlantStoreError (401), without retrying', async () => {
    const api = await start();
    const events = subscribe(createTrpcClient({ baseUrl: api.url, token: 'not-a-token' }), {});
    const error = await events.failed();
    expect(error).toBeInstanceOf(PlantStoreError);
    expect(error).toMatchObject({ status: 401, method: 'GET', url: `${api.url}/trpc/plants.events` });
    events.stop();
  });
});

/** Waits on arrays a callback fills. */
function collectPushed<T>(items: T[], errors: unknown[]) {
  const wait = async (ready: () => boolean, what: string, timeoutMs = 15_000) => {
    const deadline = Date.now() + timeoutMs;
    while (!ready()) {
      if (Date.now() > deadline) throw new Error(`${what} after ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  return {
    items,
    async until(count: number): Promise<T[]> {
      await wait(() => items.length >= count || errors.length > 0, `${items.length} of ${count} items`);
      if (errors.length > 0) throw errors[0];
      return items.slice(0, count);
    },
    async failed(): Promise<unknown> {
      await wait(() => errors.length > 0, 'no error');
      return errors[0];
    },
  };
}
