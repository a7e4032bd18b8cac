import { afterEach, describe, expect, it } from 'vitest';
import { apiOnStore } from '../support/api-on-store.ts';
import { postPlant } from '../support/http.ts';
import type { RunningApi } from '../support/in-process.ts';
import { openSse, type SseStream } from '../support/sse.ts';
import { testStores } from '../support/stores.ts';

const INT64_MAX = '9223372036854775807';

/** What a resume past the newest event is answered: 410, saying what to do. */
const pastTheEnd = (after: string | bigint, newest: bigint) => ({
  error: 410,
  message:
    `Event ${after} is past the newest event (${newest}): this store never sent it (was it restored from a backup?); ` +
    'start again without a resume id and list the plants to catch up.',
});

/** A tRPC `plants.events` subscription's URL, its input serialized as superjson. */
const trpcEvents = (base: string, input: { json: object; meta?: object }) =>
  `${base}/trpc/plants.events?input=${encodeURIComponent(JSON.stringify(input))}`;

describe.each(testStores())('resuming an event stream on $name', (testStore) => {
  let api: RunningApi;
  apiOnStore(testStore, (running) => {
    api = running.api;
  });
  const open: SseStream[] = [];
  const sse = async (url: string, headers: Record<string, string> = {}) => {
    const stream = await openSse(url, headers);
    open.push(stream);
    return stream;
  };
  afterEach(() => {
    for (const stream of open.splice(0)) stream.close();
  });
  /** Creates a plant and answers the newest event id: its event's, read from the log. */
  const commit = async (id: number): Promise<bigint> => {
    expect((await postPlant(api.url, `{"id":${id},"name":"Fern"}`)).status).toBe(200);
    const log = await sse(`${api.url}/plants/events?after=0`);
    const events = await log.waitFor(id);
    log.close();
    return BigInt(events.at(-1)!.id);
  };

  it('answers 410 to a resume past the newest event, by Last-Event-ID or ?after=, saying what to do', async () => {
    const newest = await commit(1);
    const byHeader = await sse(`${api.url}/plants/events`, { 'last-event-id': INT64_MAX });
    expect([byHeader.status, byHeader.body]).toStrictEqual([410, pastTheEnd(INT64_MAX, newest)]);
    expect(byHeader.headers.get('content-type')).toBe('application/json; charset=utf-8');
    const byQuery = await sse(`${api.url}/plants/events?after=${INT64_MAX}`);
    expect([byQuery.status, byQuery.body]).toStrictEqual([410, pastTheEnd(INT64_MAX, newest)]);
    // One past it: a client of a store restored from an older backup, whose ids start lower again.
    const justPast = await sse(`${api.url}/plants/events?types=plant.deleted`, {
      'last-event-id': String(newest + 1n),
    });
    expect([justPast.status, justPast.body]).toStrictEqual([410, pastTheEnd(newest + 1n, newest)]);
  });

  it('ends a tRPC subscription resuming past the newest event with NOT_FOUND, by lastEventId or after', async () => {
    const newest = await commit(2);
    const inputs = [
      { json: { lastEventId: INT64_MAX } },
      { json: { after: INT64_MAX }, meta: { values: { after: ['bigint'] } } },
    ];
    for (const input of inputs) {
      const subscription = await sse(trpcEvents(api.url, input));
      const [connected, error] = await subscription.waitFor(2);
      expect(connected!.event).toBe('connected');
      expect(error).toStrictEqual({
        id: '',
        event: 'serialized-error',
        data: {
          json: {
            message: pastTheEnd(INT64_MAX, newest).message,
            // Exact JSON integers, as this reader parses every one.
            code: -32004n,
            data: { code: 'NOT_FOUND', httpStatus: 404n, path: 'plants.events' },
          },
        },
      });
      subscription.close();
    }
  });

  it('resumes at the newest event itself, over SSE and tRPC, and sends the next change', async () => {
    const newest = await commit(3);
    const byHeader = await sse(`${api.url}/plants/events`, { 'last-event-id': String(newest) });
    const subscription = await sse(trpcEvents(api.url, { json: { lastEventId: String(newest) } }));
    expect([byHeader.status, subscription.status]).toStrictEqual([200, 200]);
    expect((await postPlant(api.url, '{"id":4,"name":"Moss"}')).status).toBe(200);
    const [next] = await byHeader.waitFor(1);
    expect(next).toMatchObject({ event: 'plant.created', data: { plant: { id: 4n, name: 'Moss' } } });
    const [, tracked] = await subscription.waitFor(2);
    // superjson carries the bigint ids as strings.
    expect(tracked).toMatchObject({
      id: next!.id,
      data: { json: { type: 'plant.created', plant: { id: '4', name: 'Moss' } } },
    });
  });
});
