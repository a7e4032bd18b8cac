import { stringifyJson } from '@plant-store/schema';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type ApiProcess, startApiProcess } from './support/api-process.ts';
import { JSON_HEADERS, postPlant, send, TOKEN } from './support/http.ts';
import { openSse, type SseEvent, type SseStream } from './support/sse.ts';
import { type TestStoreInstance, testStores } from './support/stores.ts';

type Event = { id: bigint; type: string; plant: { id: bigint; name?: string } };
const plantIds = (stream: SseStream) => stream.events.map((event) => (event.data as Event).plant.id);

/** The raw body of an event stream as it arrives, for asserting exact frames. */
async function openRaw(url: string) {
  const controller = new AbortController();
  const response = await fetch(url, {
    headers: { authorization: `Bearer ${TOKEN}` },
    signal: controller.signal,
  });
  const raw = { status: response.status, text: '', close: () => controller.abort() };
  void (async () => {
    const decoder = new TextDecoder();
    for await (const chunk of response.body!) raw.text += decoder.decode(chunk, { stream: true });
  })().catch(() => {});
  return raw;
}

/** An event as the stream frames it: `id:`, `event:` and `data:` with the exact JSON. */
const frame = ({ id, event, data }: SseEvent) =>
  `id: ${id}\nevent: ${event}\ndata: ${stringifyJson(data)}\n\n`;

describe.each(testStores())('GET /plants/events?types= on $name', (testStore) => {
  let store: TestStoreInstance;
  let api: ApiProcess;
  const open: { close(): void }[] = [];
  const sse = async (query = '', headers: Record<string, string> = {}) => {
    const stream = await openSse(`${api.url}/plants/events${query}`, headers);
    open.push(stream);
    return stream;
  };
  const remove = (id: bigint) => send(`${api.url}/plants/${id}`, { method: 'DELETE', headers: JSON_HEADERS });

  beforeAll(async () => {
    store = await testStore.setup();
    api = await startApiProcess({ env: { ...store.env, EVENTS_HEARTBEAT_MS: '300' } });
  });
  afterAll(async () => {
    for (const stream of open) stream.close();
    await api?.stop();
    api?.cleanup();
    await store?.teardown();
  });

  it('sends a deleted-only stream the delete alone, framed exactly as the log has it, and heartbeats', async () => {
    const every = await sse();
    const raw = await openRaw(`${api.url}/plants/events?types=plant.deleted`);
    open.push(raw);
    expect(raw.status).toBe(200);
    await postPlant(api.url, '{"id":1,"name":"Fern"}');
    await postPlant(api.url, '{"id":2,"name":"Cactus"}');
    expect((await remove(1n)).status).toBe(204);
    await postPlant(api.url, '{"id":3,"name":"Aloe"}');
    const [, , gone] = await every.waitFor(4);
    await vi.waitFor(() => expect(raw.text).toContain('event: plant.deleted'));
    await sleep(700);
    // The same frame, with the log's id, as the unfiltered stream got; nothing else but heartbeats.
    expect(raw.text.replaceAll(': heartbeat\n\n', '')).toBe(`retry: 1000\n\n${frame(gone!)}`);
    expect(raw.text).toContain(': heartbeat\n\n');
    expect(gone!.event).toBe('plant.deleted');
  });

  it('sends a created-only stream the creates alone, in order, with their log ids', async () => {
    const every = await sse();
    const creates = await sse('?types=plant.created');
    await postPlant(api.url, '{"id":10,"name":"Fern"}');
    await remove(10n);
    await postPlant(api.url, '{"id":11,"name":"Moss"}');
    await remove(11n);
    await postPlant(api.url, '{"id":12,"name":"Palm"}');
    const all = await every.waitFor(5);
    await creates.waitFor(3);
    await sleep(300);
    expect(creates.events).toStrictEqual(all.filter((event) => event.event === 'plant.created'));
    expect(plantIds(creates)).toStrictEqual([10n, 11n, 12n]);
  });

  it('takes both types as a comma-separated list, or repeated, as the unfiltered stream', async () => {
    const every = await sse();
    const listed = await sse('?types=plant.deleted,plant.created');
    const repeated = await sse('?types=plant.created&types=plant.deleted');
    await postPlant(api.url, '{"id":20,"name":"Fern"}');
    await remove(20n);
    const all = await every.waitFor(2);
    expect(await listed.waitFor(2)).toStrictEqual(all);
    expect(await repeated.waitFor(2)).toStrictEqual(all);
  });

  it('resumes a filtered stream after a disconnect: every missed event of its type once, in order, then live ones', async () => {
    for (const id of [30n, 31n, 32n, 33n]) await postPlant(api.url, `{"id":${id},"name":"Fern"}`);
    const deletes = await sse('?types=plant.deleted');
    await remove(30n);
    const [seen] = await deletes.waitFor(1);
    deletes.close();
    // Missed while disconnected: creates between the deletes, which the resumed stream skips.
    await remove(31n);
    await postPlant(api.url, '{"id":34,"name":"Fern"}');
    await remove(32n);
    const resumed = await sse('?types=plant.deleted', { 'last-event-id': seen!.id });
    await resumed.waitFor(2);
    await remove(33n);
    await resumed.waitFor(3);
    await sleep(300);
    expect(plantIds(resumed)).toStrictEqual([31n, 32n, 33n]);
    expect(resumed.events.every((event) => event.event === 'plant.deleted')).toBe(true);
    // The very events (ids included) an unfiltered reader of the log finds after the same id.
    const log = await sse(`?after=${seen!.id}`);
    await log.waitFor(4);
    expect(resumed.events).toStrictEqual(log.events.filter((event) => event.event === 'plant.deleted'));
  });

  it('answers 400 to an unknown or empty type, as an Error body', async () => {
    const unknown = await sse('?types=plant.created,plant.renamed');
    expect([unknown.status, unknown.body]).toStrictEqual([
      400,
      {
        error: 400,
        message:
          'Invalid request parameters: types.1 must be one of the event types plant.created, plant.updated, plant.deleted (not "plant.renamed").',
      },
    ]);
    const empty = await sse('?types=');
    expect([empty.status, empty.body]).toStrictEqual([
      400,
      {
        error: 400,
        message:
          'Invalid request parameters: types.0 must be one of the event types plant.created, plant.updated, plant.deleted (not "").',
      },
    ]);
  });

  it('ends the tRPC subscription with BAD_REQUEST (400) for an unknown type', async () => {
    const input = encodeURIComponent(JSON.stringify({ json: { types: ['plant.renamed'] } }));
    const controller = new AbortController();
    const response = await fetch(`${api.url}/trpc/plants.events?input=${input}`, {
      headers: { authorization: `Bearer ${TOKEN}` },
      signal: controller.signal,
    });
    let text = '';
    const decoder = new TextDecoder();
    for await (const chunk of response.body!) {
      text += decoder.decode(chunk, { stream: true });
      if (text.includes('event: serialized-error')) break;
    }
    controller.abort();
    const line = text.split('\n').find((l) => l.startsWith('data: {"json":{"message"'));
    expect(JSON.parse(line!.slice('data: '.length))).toStrictEqual({
      json: {
        message:
          'Invalid request parameters: types.0 must be one of the event types plant.created, plant.updated, plant.deleted (not "plant.renamed").',
        code: -32600,
        data: { code: 'BAD_REQUEST', httpStatus: 400, path: 'plants.events' },
      },
    });
  });
});
