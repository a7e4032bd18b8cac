import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../src/config/config.ts';
import { createEventHub, type EventHub } from '../../src/events/hub.ts';
import { openStore } from '../../src/store/open-store.ts';
import type { PlantStore, StoredEvent } from '../../src/store/contract.ts';
import { TOKEN } from '../support/http.ts';
import { type TestStoreInstance, testStores } from '../support/stores.ts';

const LIMITS = { maxStreams: 10, maxStreamsPerToken: 10, buffer: 5, pollMs: 50, maxReplay: 10_000 };

/** Takes `count` events from a stream's iterator. */
async function take(iterator: AsyncIterator<StoredEvent>, count: number): Promise<StoredEvent[]> {
  const events: StoredEvent[] = [];
  while (events.length < count) {
    const next = await iterator.next();
    if (next.done) break;
    events.push(next.value);
  }
  return events;
}

describe.each(testStores())('the event hub on $name', (testStore) => {
  let instance: TestStoreInstance;
  let store: PlantStore;
  let hub: EventHub;

  beforeEach(async () => {
    instance = await testStore.setup();
    store = await openStore(loadConfig({ ...instance.env, API_TOKENS: TOKEN }).store);
    hub = createEventHub(store.events, LIMITS, pino({ level: 'silent' }));
  });
  afterEach(async () => {
    hub.close();
    await store.close();
    await instance.teardown();
  });

  it('cuts a stream whose consumer does not keep up, and the consumer resumes by id from the log', async () => {
    const stream = await hub.open({ tokenName: 'tester' });
    const iterator = stream[Symbol.asyncIterator]();
    const first = take(iterator, 2);
    await store.create({ id: 1n, name: 'Fern' });
    await store.create({ id: 2n, name: 'Fern' });
    const seen = await first;
    // The consumer stops reading; the hub holds at most `buffer` events for it.
    for (let id = 3n; id <= 20n; id++) await store.create({ id, name: 'Fern' });
    expect(await stream.ended).toBe('overflow');
    expect(hub.size).toBe(0);
    const resumed = (await hub.open({ tokenName: 'tester', after: seen[1]!.id }))[Symbol.asyncIterator]();
    const rest = await take(resumed, 18);
    expect(rest.map((event) => event.plant.id)).toStrictEqual(
      Array.from({ length: 18 }, (_, i) => BigInt(i + 3)),
    );
    await resumed.return?.(undefined);
  });

  it('hands a resuming stream its backlog past a page, then live events, with no gap and no repeat', async () => {
    for (let id = 1n; id <= 1_200n; id++) await store.create({ id, name: 'Fern' });
    // Room for every live event: a consumer slowed down by a busy machine must not be cut here.
    const roomy = createEventHub(store.events, { ...LIMITS, buffer: 10_000 }, pino({ level: 'silent' }));
    const stream = await roomy.open({ tokenName: 'tester', after: 0n });
    const iterator = stream[Symbol.asyncIterator]();
    // More changes commit while the stream reads its backlog.
    const writing = (async () => {
      for (let id = 1_201n; id <= 1_260n; id++) await store.create({ id, name: 'Fern' });
      await store.delete(5n);
    })();
    const events: StoredEvent[] = [];
    while (events.length < 1_261) {
      const next = await take(iterator, 1);
      if (next.length === 0) throw new Error(`the stream ended after ${events.length} events`);
      events.push(...next);
    }
    await writing;
    expect(events.map((event) => event.type === 'plant.created' && event.plant.id)).toStrictEqual([
      ...Array.from({ length: 1_260 }, (_, i) => BigInt(i + 1)),
      false,
    ]);
    expect(events.at(-1)).toMatchObject({ type: 'plant.deleted', plant: { id: 5n } });
    expect(events.every((event, i) => i === 0 || event.id > events[i - 1]!.id)).toBe(true);
    await iterator.return?.(undefined);
    roomy.close();
  });

  it('prunes old events in bounded batches, remembers how far, and refuses to resume before that (410)', async () => {
    for (const id of [1n, 2n, 3n]) await store.create({ id, name: 'Fern' });
    const [, , last] = await store.events.after(0n, 10);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await store.events.prune({ olderThanMs: 0, limit: 2 })).toBe(2);
    expect(await store.events.prunedThrough()).toBe(last!.id - 1n);
    expect(await store.events.prune({ olderThanMs: 0, limit: 2 })).toBe(1);
    expect(await store.events.prunedThrough()).toBe(last!.id);
    // Pruning everything does not move the head back.
    expect(await store.events.head()).toBe(last!.id);
    await expect(hub.open({ tokenName: 'tester', after: 0n })).rejects.toMatchObject({ status: 410 });
    const resumed = (await hub.open({ tokenName: 'tester', after: last!.id }))[Symbol.asyncIterator]();
    await store.create({ id: 4n, name: 'Fern' });
    expect((await take(resumed, 1))[0]).toMatchObject({ id: last!.id + 1n, plant: { id: 4n } });
    await resumed.return?.(undefined);
  });

  it('drains the live events waiting for a stream, in order, and its iterator goes on after them', async () => {
    await store.create({ id: 1n, name: 'Fern' });
    const stream = await hub.open({ tokenName: 'tester', after: 0n });
    // Reading its backlog from the log: nothing waits in the hub for it yet.
    expect(stream.drain()).toStrictEqual([]);
    const iterator = stream[Symbol.asyncIterator]();
    expect((await take(iterator, 1)).map((event) => event.plant.id)).toStrictEqual([1n]);
    const second = take(iterator, 1);
    await store.create({ id: 2n, name: 'Fern' });
    expect((await second).map((event) => event.plant.id)).toStrictEqual([2n]);
    // Live now: three more commit while the consumer is busy; one drain takes all of them.
    for (let id = 3n; id <= 5n; id++) await store.create({ id, name: 'Fern' });
    const drained: StoredEvent[] = [];
    await vi.waitFor(() => {
      drained.push(...stream.drain());
      expect(drained).toHaveLength(3);
    });
    expect(drained.map((event) => event.plant.id)).toStrictEqual([3n, 4n, 5n]);
    expect(stream.drain()).toStrictEqual([]);
    const next = take(iterator, 1);
    await store.create({ id: 6n, name: 'Fern' });
    expect((await next).map((event) => event.plant.id)).toStrictEqual([6n]);
    await iterator.return?.(undefined);
    expect(stream.drain()).toStrictEqual([]);
  });

  it('hands every stream that keeps up the same page of events, with one onLive call per page', async () => {
    const first = await hub.open({ tokenName: 'tester' });
    const second = await hub.open({ tokenName: 'tester' });
    // Opened without a resume id: no backlog, live at once.
    for (const stream of [first, second])
      for await (const page of stream.backlog()) throw new Error(`a backlog of ${page.length} events`);
    let calls = 0;
    first.onLive(() => calls++);
    // One turn, so one commit and one page.
    await Promise.all([1n, 2n, 3n].map((id) => store.create({ id, name: 'Fern' })));
    await vi.waitFor(() => expect(calls).toBe(1));
    const taken = first.drain();
    expect(taken.map((event) => event.plant.id)).toStrictEqual([1n, 2n, 3n]);
    // The very same array: a writer serialises it once for every stream.
    expect(second.drain()).toBe(taken);
    first.close();
    second.close();
  });

  it('hands streams of one filter the same filtered page, and a page with none of their types not at all', async () => {
    const deletes = [
      await hub.open({ tokenName: 'tester', types: ['plant.deleted'] }),
      await hub.open({ tokenName: 'tester', types: ['plant.deleted'] }),
    ];
    const creates = await hub.open({ tokenName: 'tester', types: ['plant.created'] });
    const every = await hub.open({ tokenName: 'tester', types: ['plant.deleted', 'plant.created'] });
    // Opened without a resume id: no backlog, live once the (empty) backlog is read.
    for (const stream of [...deletes, creates, every])
      for await (const page of stream.backlog()) throw new Error(`a backlog of ${page.length} events`);
    let deleteCalls = 0;
    deletes[0]!.onLive(() => deleteCalls++);
    const everySeen: StoredEvent[] = [];
    const everyHas = async (count: number) =>
      vi.waitFor(() => {
        everySeen.push(...every.drain());
        expect(everySeen).toHaveLength(count);
      });
    // Creates only: the deleted-only streams are not even woken.
    await Promise.all([1n, 2n, 3n].map((id) => store.create({ id, name: 'Fern' })));
    await everyHas(3);
    expect(deleteCalls).toBe(0);
    expect(deletes[0]!.drain()).toStrictEqual([]);
    // Each group gets its part, in order, as the log has it.
    await store.delete(1n);
    await store.create({ id: 4n, name: 'Fern' });
    await everyHas(5);
    await vi.waitFor(() => expect(deleteCalls).toBe(1));
    const deleted = deletes[0]!.drain();
    expect(deleted).toStrictEqual([everySeen[3]]);
    // The same array for every stream of a group: a writer frames it once for all of them.
    expect(deletes[1]!.drain()).toBe(deleted);
    const created: StoredEvent[] = [];
    await vi.waitFor(() => {
      created.push(...creates.drain());
      expect(created).toHaveLength(4);
    });
    expect(created).toStrictEqual(everySeen.filter((event) => event.type === 'plant.created'));
    // Both types asked for is no filter: every event, ids as in the log.
    expect(everySeen.map((event) => event.id)).toStrictEqual(
      (await store.events.after(everySeen[0]!.id - 1n, 10)).map((event) => event.id),
    );
    for (const stream of [...deletes, creates, every]) stream.close();
  });

  it('reads a filtered backlog past pages without its types, then joins the live ones', async () => {
    for (let id = 1n; id <= 1_200n; id++) await store.create({ id, name: 'Fern' });
    await store.delete(600n);
    const stream = await hub.open({ tokenName: 'tester', after: 0n, types: ['plant.deleted'] });
    const iterator = stream[Symbol.asyncIterator]();
    const [first] = await take(iterator, 1);
    expect(first).toMatchObject({ type: 'plant.deleted', plant: { id: 600n } });
    const next = take(iterator, 1);
    await store.create({ id: 1_201n, name: 'Fern' });
    await store.delete(7n);
    expect((await next)[0]).toMatchObject({ type: 'plant.deleted', plant: { id: 7n } });
    await iterator.return?.(undefined);
  });

  it('gives a writer without the iterator the backlog page by page, then live events by drain', async () => {
    for (const id of [1n, 2n]) await store.create({ id, name: 'Fern' });
    const stream = await hub.open({ tokenName: 'tester', after: 0n });
    const backlog: StoredEvent[] = [];
    for await (const page of stream.backlog()) backlog.push(...page);
    expect(backlog.map((event) => event.plant.id)).toStrictEqual([1n, 2n]);
    const woken = new Promise<void>((resolve) => stream.onLive(resolve));
    await store.create({ id: 3n, name: 'Fern' });
    await woken;
    expect(stream.drain().map((event) => event.plant.id)).toStrictEqual([3n]);
    stream.close();
    expect(await stream.ended).toBe('closed');
  });

  it('counts the events after an id through the log, no further than the limit', async () => {
    for (let id = 1n; id <= 8n; id++) await store.create({ id, name: 'Fern' });
    const [first] = await store.events.after(0n, 1);
    expect(await store.events.countAfter(0n, 100)).toBe(8);
    expect(await store.events.countAfter(0n, 5)).toBe(5);
    expect(await store.events.countAfter(first!.id + 5n, 100)).toBe(2);
    expect(await store.events.countAfter(first!.id + 7n, 100)).toBe(0);
  });

  it('refuses to replay more than maxReplay events (410), however a stream resumes', async () => {
    const bounded = createEventHub(store.events, { ...LIMITS, maxReplay: 5 }, pino({ level: 'silent' }));
    try {
      for (let id = 1n; id <= 8n; id++) await store.create({ id, name: 'Fern' });
      const [, , third] = await store.events.after(0n, 3);
      for (const after of [0n, third!.id - 1n]) {
        await expect(bounded.open({ tokenName: 'tester', after })).rejects.toMatchObject({
          status: 410,
          message:
            `More than 5 events follow ${after}, more than a stream replays (see EVENTS_REPLAY_MAX); ` +
            'start again without a resume id and list the plants to catch up.',
        });
      }
      expect(bounded.size).toBe(0);
      // Exactly 5 follow the third: replayed, then live.
      const iterator = (await bounded.open({ tokenName: 'tester', after: third!.id }))[
        Symbol.asyncIterator
      ]();
      expect((await take(iterator, 5)).map((event) => event.plant.id)).toStrictEqual([4n, 5n, 6n, 7n, 8n]);
      await iterator.return?.(undefined);
      // Without a resume id nothing is replayed, whatever the log holds.
      expect((await bounded.open({ tokenName: 'tester' })).drain()).toStrictEqual([]);
    } finally {
      bounded.close();
    }
  });

  it('refuses a resume past the store’s newest event (410), and takes one at an event another instance sent before this hub read it', async () => {
    // Another instance: its own connection to the store. This hub hears of its commits by polling
    // alone on SQLite (slowly here), by notification on PostgreSQL.
    const other = await openStore(loadConfig({ ...instance.env, API_TOKENS: TOKEN }).store);
    const slow = createEventHub(store.events, { ...LIMITS, pollMs: 60_000 }, pino({ level: 'silent' }));
    try {
      // Following the log from here on.
      const watching = await slow.open({ tokenName: 'tester' });
      await other.create({ id: 1n, name: 'Fern' });
      const [sent] = await other.events.after(0n, 1);
      const resumed = (await slow.open({ tokenName: 'tester', after: sent!.id }))[Symbol.asyncIterator]();
      for (const after of [sent!.id + 1n, 2n ** 63n - 1n]) {
        await expect(slow.open({ tokenName: 'tester', after })).rejects.toMatchObject({
          status: 410,
          message:
            `Event ${after} is past the newest event (${sent!.id}): this store never sent it (was it restored from a backup?); ` +
            'start again without a resume id and list the plants to catch up.',
        });
      }
      expect(slow.size).toBe(2);
      await store.create({ id: 2n, name: 'Fern' });
      expect((await take(resumed, 1)).map((event) => event.plant.id)).toStrictEqual([2n]);
      await resumed.return?.(undefined);
      watching.close();
    } finally {
      slow.close();
      await other.close();
    }
  });

  it('shares a full instance fairly: a token below its share takes the place of the largest holder’s oldest stream', async () => {
    const fair = createEventHub(
      store.events,
      { ...LIMITS, maxStreams: 10, maxStreamsPerToken: 20 },
      pino({ level: 'silent' }),
    );
    try {
      const held = new Map<string, { stream: Awaited<ReturnType<EventHub['open']>>; ended?: string }[]>();
      /** Opens streams for `token` until refused; resolves with the status that refused it. */
      const openUntilRefused = async (token: string) => {
        for (;;) {
          try {
            const stream = await fair.open({ tokenName: token });
            const entry: { stream: typeof stream; ended?: string } = { stream };
            void stream.ended.then((reason) => {
              entry.ended = reason;
            });
            held.set(token, [...(held.get(token) ?? []), entry]);
          } catch (error) {
            return (error as { status: number }).status;
          }
        }
      };
      const live = (token: string) =>
        (held.get(token) ?? []).filter((entry) => entry.ended === undefined).length;
      const settle = () => new Promise((resolve) => setImmediate(resolve));

      // One token fills the instance; it is then refused 503 (no holder has two more than it).
      expect(await openUntilRefused('greedy')).toBe(503);
      expect(live('greedy')).toBe(10);
      // A second token takes places until both hold their share: floor(10 / 2) = 5 each.
      expect(await openUntilRefused('second')).toBe(503);
      await settle();
      expect([live('greedy'), live('second')]).toStrictEqual([5, 5]);
      // The streams that gave their places were the greedy token's oldest, ended as 'displaced'.
      const greedy = held.get('greedy')!;
      expect(greedy.map((entry) => entry.ended ?? 'open')).toStrictEqual([
        ...Array(5).fill('displaced'),
        ...Array(5).fill('open'),
      ]);
      // A third: each of the 3 holds at least floor(10 / 3) = 3, and the instance stays full.
      expect(await openUntilRefused('third')).toBe(503);
      await settle();
      const counts = ['greedy', 'second', 'third'].map(live);
      expect(counts.reduce((a, b) => a + b)).toBe(10);
      expect(Math.min(...counts)).toBeGreaterThanOrEqual(3);
      expect(fair.size).toBe(10);
      // No back and forth: the largest holder, reopening, is refused rather than displacing.
      expect(await openUntilRefused('greedy')).toBe(503);
      await settle();
      expect(['greedy', 'second', 'third'].map(live)).toStrictEqual(counts);
    } finally {
      fair.close();
    }
  });

  it('ends the streams of the tokens retain refuses (revoked), asking once per token, and hands them nothing more', async () => {
    const revoked = [await hub.open({ tokenName: 'revoked' }), await hub.open({ tokenName: 'revoked' })];
    const kept = await hub.open({ tokenName: 'kept' });
    const iterator = revoked[0]![Symbol.asyncIterator]();
    const asked: string[] = [];
    hub.retain((tokenName) => {
      asked.push(tokenName);
      return tokenName !== 'revoked';
    });
    expect(asked.sort()).toStrictEqual(['kept', 'revoked']);
    expect(await Promise.all(revoked.map((stream) => stream.ended))).toStrictEqual(['revoked', 'revoked']);
    expect(await iterator.next()).toStrictEqual({ done: true, value: undefined });
    expect(hub.size).toBe(1);
    await store.create({ id: 1n, name: 'Fern' });
    const live = kept[Symbol.asyncIterator]();
    expect((await take(live, 1)).map((event) => event.plant.id)).toStrictEqual([1n]);
    expect(revoked[1]!.drain()).toStrictEqual([]);
    // The token may open streams again (if a request could authenticate with it).
    expect((await hub.open({ tokenName: 'revoked' })).ended).toBeInstanceOf(Promise);
    await live.return?.(undefined);
  });

  it('ends every stream on close and refuses new ones', async () => {
    const stream = await hub.open({ tokenName: 'tester' });
    hub.close();
    expect(await stream.ended).toBe('shutdown');
    await expect(hub.open({ tokenName: 'tester' })).rejects.toMatchObject({ status: 503 });
  });
});
