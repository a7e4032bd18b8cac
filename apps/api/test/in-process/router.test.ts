import { TRPCError } from '@trpc/server';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AuthResult } from '../../src/auth/tokens.ts';
import type { Scope } from '../../src/auth/scopes.ts';
import { loadConfig } from '../../src/config/config.ts';
import { createEventHub, type EventHub } from '../../src/events/hub.ts';
import { createHeavyReads } from '../../src/operations/heavy-reads.ts';
import { DEFAULT_IDEMPOTENCY_POLICY } from '../../src/operations/idempotency.ts';
import type { RequestScope } from '../../src/operations/operation.ts';
import { appRouter } from '../../src/trpc/router.ts';
import { openStore } from '../../src/store/open-store.ts';
import type { PlantStore } from '../../src/store/contract.ts';
import type { Context } from '../../src/trpc/procedures.ts';
import { newPlantWebhook, type NewPlantWebhook } from '../../src/webhooks/event.ts';
import { TOKEN } from '../support/http.ts';
import { type TestStoreInstance, testStores } from '../support/stores.ts';

const createCaller = appRouter.createCaller;
const BIG = 2n ** 53n + 1n;

const as = (...scopes: Scope[]): AuthResult => ({ ok: true, principal: { tokenName: 'tester', scopes } });

/** What a rejected call threw, as `{code, message}`; fails the test if it resolved or threw anything else. */
async function rejection(call: Promise<unknown>): Promise<{ code: string; message: string }> {
  const error = await call.then(
    (value) => expect.unreachable(`resolved with ${String(value)}`),
    (error: unknown) => error,
  );
  expect(error).toBeInstanceOf(TRPCError);
  const { code, message } = error as TRPCError;
  return { code, message };
}

/**
 * The fields and messages of an input validation failure: tRPC's BAD_REQUEST, caused by the
 * pipeline's RequestError, caused by zod's issues.
 */
async function invalid(call: Promise<unknown>): Promise<{ path: PropertyKey[]; message: string }[]> {
  const error = await call.then(
    () => expect.unreachable('resolved'),
    (error: unknown) => error,
  );
  expect(error).toBeInstanceOf(TRPCError);
  expect((error as TRPCError).code).toBe('BAD_REQUEST');
  const { issues } = ((error as TRPCError).cause as Error).cause as {
    issues: { path: PropertyKey[]; message: string }[];
  };
  return issues.map(({ path, message }) => ({ path, message }));
}

/**
 * The router called in-process through tRPC's `createCaller`, with the context built directly: a
 * real store, an authentication result, no HTTP and no build.
 */
describe.each(testStores())('the router on the $name store', (testStore) => {
  let instance: TestStoreInstance;
  let store: PlantStore;
  let events: EventHub;
  /** Callbacks operations registered for "the answer was sent", run after each test. */
  let answered: (() => void)[];

  const caller = (auth: AuthResult, webhooks: NewPlantWebhook = newPlantWebhook()) => {
    const request: RequestScope = { calls: 1, onAnswered: (done) => answered.push(done), abort: () => {} };
    const heavyReads = createHeavyReads();
    const ctx: Context = {
      store,
      webhooks,
      events,
      heavyReads,
      idempotency: DEFAULT_IDEMPOTENCY_POLICY,
      auth,
      request,
    };
    return createCaller(ctx).plants;
  };
  const plants = () => caller(as('read', 'write'));

  beforeEach(async () => {
    answered = [];
    instance = await testStore.setup();
    store = await openStore(loadConfig({ ...instance.env, API_TOKENS: TOKEN }).store);
    events = createEventHub(
      store.events,
      { maxStreams: 10, maxStreamsPerToken: 5, buffer: 100, pollMs: 50, maxReplay: 10_000 },
      pino({ level: 'silent' }),
    );
  });
  afterEach(async () => {
    events.close();
    for (const done of answered) done();
    await store.close();
    await instance.teardown();
  });

  describe('plants.create', () => {
    it('stores the plant and answers it without its id, tag omitted when absent', async () => {
      expect(await plants().create({ id: BIG, name: 'Monstera', tag: 'aroid' })).toStrictEqual({
        name: 'Monstera',
        tag: 'aroid',
      });
      expect(await plants().create({ id: BIG - 1n, name: 'Fern' })).toStrictEqual({ name: 'Fern' });
      expect(await instance.ids()).toEqual([BIG - 1n, BIG]);
    });

    it('answers CONFLICT to an id that exists, and keeps the first plant', async () => {
      await plants().create({ id: 7n, name: 'Fern' });
      expect(await rejection(plants().create({ id: 7n, name: 'Cactus' }))).toStrictEqual({
        code: 'CONFLICT',
        message: 'A plant with id 7 already exists.',
      });
      expect(await plants().get({ id: 7n })).toStrictEqual({
        id: 7n,
        name: 'Fern',
        version: expect.any(BigInt),
      });
    });

    it("enqueues the new-plant webhook's deliveries with the plant, and none for an id that exists", async () => {
      const urls = ['http://127.0.0.1:9/a', 'http://127.0.0.1:9/b'];
      const subscribed = caller(as('write'), newPlantWebhook(urls));
      expect(await subscribed.create({ id: BIG, name: 'Monstera', tag: 'aroid' })).toStrictEqual({
        name: 'Monstera',
        tag: 'aroid',
      });
      expect((await rejection(subscribed.create({ id: BIG, name: 'Fern' }))).code).toBe('CONFLICT');
      // Without subscribers, a create enqueues nothing.
      await plants().create({ id: 1n, name: 'Fern' });
      const claimed = await Promise.all(
        urls.map((url) => store.deliveries.claim({ url, limit: 10, leaseMs: 60_000 })),
      );
      expect(claimed.flat().map(({ url, payload }) => ({ url, payload }))).toStrictEqual(
        urls.map((url) => ({ url, payload: `{"id":${BIG},"name":"Monstera","tag":"aroid"}` })),
      );
      expect(await store.deliveries.counts()).toStrictEqual({ pending: 2, delivered: 0, failed: 0 });
    });

    it('answers BAD_REQUEST naming each offending field, and stores nothing', async () => {
      expect(await invalid(plants().create({ id: '12', name: 'Fern' } as never))).toStrictEqual([
        { path: ['id'], message: 'must be an integer from -9223372036854775808 to 9223372036854775807' },
      ]);
      expect(
        await invalid(plants().create({ id: 1n, name: 'x'.repeat(201), tag: 't'.repeat(101) })),
      ).toStrictEqual([
        { path: ['name'], message: 'must be at most 200 characters' },
        { path: ['tag'], message: 'must be at most 100 characters' },
      ]);
      expect(await instance.ids()).toEqual([]);
    });
  });

  describe('plants.list', () => {
    it('answers a page in ascending id order, with the cursor of the next page while more remain', async () => {
      for (const id of [3n, BIG, -BIG])
        await plants().create({ id, name: `P${id}`, ...(id === 3n && { tag: 't' }) });
      expect(await plants().list({ limit: 2 })).toStrictEqual({
        plants: [
          { id: -BIG, name: `P${-BIG}`, version: 3n },
          { id: 3n, name: 'P3', tag: 't', version: 1n },
        ],
        next: 3n,
      });
      expect(await plants().list({ limit: 2, after: 3n })).toStrictEqual({
        plants: [{ id: BIG, name: `P${BIG}`, version: 2n }],
        next: null,
      });
      expect(await plants().list({})).toStrictEqual({
        plants: [
          { id: -BIG, name: `P${-BIG}`, version: 3n },
          { id: 3n, name: 'P3', tag: 't', version: 1n },
          { id: BIG, name: `P${BIG}`, version: 2n },
        ],
        next: null,
      });
    });

    it('answers BAD_REQUEST to a limit outside 1–1000', async () => {
      for (const limit of [0, 1001])
        expect(await invalid(plants().list({ limit }))).toStrictEqual([
          { path: ['limit'], message: 'must be an integer from 1 to 1000' },
        ]);
    });
  });

  describe('plants.get and plants.delete', () => {
    it('reads and deletes exactly the plant asked for, then answers NOT_FOUND', async () => {
      await plants().create({ id: BIG, name: 'Monstera', tag: 'aroid' });
      await plants().create({ id: BIG - 1n, name: 'Fern' });
      expect(await plants().get({ id: BIG })).toStrictEqual({
        id: BIG,
        name: 'Monstera',
        tag: 'aroid',
        version: expect.any(BigInt),
      });
      expect(await plants().delete({ id: BIG })).toBeUndefined();
      const gone = { code: 'NOT_FOUND', message: `There is no plant with id ${BIG}.` };
      expect(await rejection(plants().get({ id: BIG }))).toStrictEqual(gone);
      expect(await rejection(plants().delete({ id: BIG }))).toStrictEqual(gone);
      expect(await instance.ids()).toEqual([BIG - 1n]);
    });
  });

  describe('plants.update', () => {
    it('answers the plant with its new version; a stale expectedVersion is PRECONDITION_FAILED, changing nothing', async () => {
      await plants().create({ id: BIG, name: 'Monstera', tag: 'aroid' });
      expect(await plants().update({ id: BIG, tag: null, expectedVersion: 1n })).toStrictEqual({
        id: BIG,
        name: 'Monstera',
        version: 2n,
      });
      // A patch that changes nothing keeps the version.
      expect(await plants().update({ id: BIG, name: 'Monstera' })).toStrictEqual({
        id: BIG,
        name: 'Monstera',
        version: 2n,
      });
      const stale = {
        code: 'PRECONDITION_FAILED',
        message: `Plant ${BIG} is at version 2, not the one this request expected; read it again and retry. Nothing was changed.`,
      };
      expect(await rejection(plants().update({ id: BIG, name: 'Fern', expectedVersion: 1n }))).toStrictEqual(
        stale,
      );
      expect(await rejection(plants().delete({ id: BIG, expectedVersion: 1n }))).toStrictEqual(stale);
      expect(await plants().get({ id: BIG })).toStrictEqual({ id: BIG, name: 'Monstera', version: 2n });
      expect(await rejection(plants().update({ id: 5n, name: 'Fern' }))).toStrictEqual({
        code: 'NOT_FOUND',
        message: 'There is no plant with id 5.',
      });
      expect(await invalid(plants().update({ id: BIG, name: null } as never))).toStrictEqual([
        { path: ['name'], message: 'must be a string' },
      ]);
      expect(await plants().delete({ id: BIG, expectedVersion: 2n })).toBeUndefined();
      expect(await instance.ids()).toEqual([]);
    });
  });

  describe('plants.events', () => {
    it('streams each committed create and delete, in order, with exact ids; resumes after lastEventId', async () => {
      const stream = await plants().events({ lastEventId: '0' });
      const iterator = stream[Symbol.asyncIterator]();
      await plants().create({ id: BIG, name: 'Monstera', tag: 'aroid' });
      expect((await rejection(plants().create({ id: BIG, name: 'Duplicate' }))).code).toBe('CONFLICT');
      await plants().delete({ id: BIG });
      const first = (await iterator.next()).value as unknown as [
        string,
        { id: bigint; type: string; plant: unknown },
      ];
      const second = (await iterator.next()).value as unknown as [
        string,
        { id: bigint; type: string; plant: unknown },
      ];
      // tracked(id, event): the id as a string for SSE, the event with its id as a bigint.
      expect([first[1].type, first[1].plant]).toStrictEqual([
        'plant.created',
        { id: BIG, name: 'Monstera', tag: 'aroid', version: first[1].id },
      ]);
      expect([second[1].type, second[1].plant]).toStrictEqual(['plant.deleted', { id: BIG }]);
      expect(first[0]).toBe(String(first[1].id));
      expect(second[1].id).toBeGreaterThan(first[1].id);
      await iterator.return?.();
      // Resuming after the first event gives the second, and nothing before it.
      const resumed = (await plants().events({ lastEventId: first[0] }))[Symbol.asyncIterator]();
      expect(((await resumed.next()).value as unknown as [string])[0]).toBe(second[0]);
      await resumed.return?.();
    });

    it('needs the read scope', async () => {
      // Checked before the input is read, as for every procedure: the call itself is refused.
      expect(await rejection(caller(as('write')).events({}))).toStrictEqual({
        code: 'FORBIDDEN',
        message: 'This token lacks the read scope this operation needs.',
      });
    });
  });

  describe('authorization', () => {
    it('answers UNAUTHORIZED to every procedure without a valid token, and stores nothing', async () => {
      const missing = {
        code: 'UNAUTHORIZED',
        message: 'Missing bearer token: send it as "Authorization: Bearer <token>".',
      };
      const unknown = { code: 'UNAUTHORIZED', message: 'The bearer token is not valid.' };
      for (const [auth, expected] of [
        [{ ok: false, reason: 'missing' }, missing],
        [{ ok: false, reason: 'invalid' }, unknown],
      ] as const) {
        const anonymous = caller(auth);
        expect(await rejection(anonymous.create({ id: 1n, name: 'Fern' }))).toStrictEqual(expected);
        expect(await rejection(anonymous.list({}))).toStrictEqual(expected);
        expect(await rejection(anonymous.get({ id: 1n }))).toStrictEqual(expected);
        expect(await rejection(anonymous.delete({ id: 1n }))).toStrictEqual(expected);
      }
      expect(await instance.ids()).toEqual([]);
    });

    it('checks the token before the input: UNAUTHORIZED, not BAD_REQUEST', async () => {
      expect((await rejection(caller({ ok: false, reason: 'missing' }).create({} as never))).code).toBe(
        'UNAUTHORIZED',
      );
    });

    it('answers FORBIDDEN to a token without the scope a procedure needs', async () => {
      await plants().create({ id: 1n, name: 'Fern' });
      const noRead = { code: 'FORBIDDEN', message: 'This token lacks the read scope this operation needs.' };
      const noWrite = {
        code: 'FORBIDDEN',
        message: 'This token lacks the write scope this operation needs.',
      };
      const writer = caller(as('write'));
      expect(await rejection(writer.list({}))).toStrictEqual(noRead);
      expect(await rejection(writer.get({ id: 1n }))).toStrictEqual(noRead);
      const reader = caller(as('read'));
      expect(await rejection(reader.create({ id: 2n, name: 'Cactus' }))).toStrictEqual(noWrite);
      expect(await rejection(reader.delete({ id: 1n }))).toStrictEqual(noWrite);
      expect(await reader.get({ id: 1n })).toStrictEqual({
        id: 1n,
        name: 'Fern',
        version: expect.any(BigInt),
      });
      expect(await writer.delete({ id: 1n })).toBeUndefined();
      expect(await instance.ids()).toEqual([]);
    });
  });
});
