import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiProcess, startApiProcess } from '../support/api-process.ts';
import { JSON_HEADERS, postPlant, send } from '../support/http.ts';
import { openSse, type SseStream } from '../support/sse.ts';
import { type TestStoreInstance, testStores } from '../support/stores.ts';

const PATCH_HEADERS = { ...JSON_HEADERS, 'content-type': 'application/merge-patch+json' };

describe.each(testStores())('plant.updated in the event streams on $name (built service)', (testStore) => {
  let store: TestStoreInstance;
  let api: ApiProcess;
  const open: SseStream[] = [];
  const sse = async (path: string, headers: Record<string, string> = {}) => {
    const stream = await openSse(`${api.url}${path}`, headers);
    open.push(stream);
    return stream;
  };
  const patch = (id: number, body: string) =>
    send(`${api.url}/plants/${id}`, { method: 'PATCH', headers: PATCH_HEADERS, body });

  beforeAll(async () => {
    store = await testStore.setup();
    api = await startApiProcess({ env: store.env });
  });
  afterAll(async () => {
    for (const stream of open) stream.close();
    await api?.stop();
    api?.cleanup();
    await store?.teardown();
  });

  it('sends plant.updated with the plant after the change and the fields changed; created carries version', async () => {
    const stream = await sse('/plants/events');
    const updatedOnly = await sse('/plants/events?types=plant.updated');
    const created = await postPlant(api.url, '{"id":1,"name":"Fern","tag":"green"}');
    const v1 = created.headers.get('etag')!.slice(1, -1);
    const renamed = await patch(1, '{"name":"Big fern"}');
    const v2 = renamed.headers.get('etag')!.slice(1, -1);
    // A no-op is no event.
    expect((await patch(1, '{"name":"Big fern"}')).headers.get('etag')).toBe(`"${v2}"`);
    const untagged = await patch(1, '{"tag":null,"name":"Fern"}');
    const v3 = untagged.headers.get('etag')!.slice(1, -1);
    expect((await send(`${api.url}/plants/1`, { method: 'DELETE', headers: JSON_HEADERS })).status).toBe(204);

    const events = await stream.waitFor(4);
    expect(events.map(({ id, event }) => ({ id, event }))).toEqual([
      { id: v1, event: 'plant.created' },
      { id: v2, event: 'plant.updated' },
      { id: v3, event: 'plant.updated' },
      { id: String(BigInt(v3) + 1n), event: 'plant.deleted' },
    ]);
    const [first, second, third] = events.map((event) => event.data as Record<string, unknown>);
    expect(first).toMatchObject({
      id: BigInt(v1),
      type: 'plant.created',
      plant: { id: 1n, name: 'Fern', tag: 'green', version: BigInt(v1) },
    });
    expect(second).toMatchObject({
      id: BigInt(v2),
      type: 'plant.updated',
      plant: { id: 1n, name: 'Big fern', tag: 'green', version: BigInt(v2) },
      changed: ['name'],
    });
    expect(third).toMatchObject({
      type: 'plant.updated',
      plant: { id: 1n, name: 'Fern', version: BigInt(v3) },
      changed: ['name', 'tag'],
    });
    expect(third!.plant).not.toHaveProperty('tag');

    const filtered = await updatedOnly.waitFor(2);
    expect(filtered.map(({ id }) => id)).toEqual([v2, v3]);

    // Resuming across an update, by query or Last-Event-ID: the events after it, nothing twice.
    const resumed = await sse(`/plants/events?after=${v1}`);
    expect((await resumed.waitFor(3)).map(({ id }) => id)).toEqual([v2, v3, String(BigInt(v3) + 1n)]);
    const byHeader = await sse('/plants/events?types=plant.updated,plant.deleted', { 'last-event-id': v2 });
    expect((await byHeader.waitFor(2)).map(({ id, event }) => `${id} ${event}`)).toEqual([
      `${v3} plant.updated`,
      `${BigInt(v3) + 1n} plant.deleted`,
    ]);

    // The tRPC subscription carries the same event.
    const input = encodeURIComponent(
      JSON.stringify({
        json: { after: v1, types: ['plant.updated'] },
        meta: { values: { after: ['bigint'] } },
      }),
    );
    const subscription = await sse(`/trpc/plants.events?input=${input}`);
    const [, update] = await subscription.waitFor(2);
    expect(update).toMatchObject({
      id: v2,
      data: { json: { type: 'plant.updated', changed: ['name'], plant: { name: 'Big fern', tag: 'green' } } },
    });
  });
});
