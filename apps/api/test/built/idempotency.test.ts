import { setTimeout as sleep } from 'node:timers/promises';
import { Database } from '../../src/store/sqlite/driver.ts';
import { describe, expect, it } from 'vitest';
import { configuredTokenName } from '../../src/auth/tokens.ts';
import { loadConfig } from '../../src/config/config.ts';
import { fingerprintOf } from '../../src/operations/idempotency.ts';
import { createPlant } from '../../src/operations/plants.ts';
import { openStore } from '../../src/store/open-store.ts';
import { KeyClaimLostError } from '../../src/store/contract.ts';
import { apiOnStore } from '../support/api-on-store.ts';
import { startApiProcess } from '../support/api-process.ts';
import type { RunningApi } from '../support/in-process.ts';
import { type Answer, errorBody, JSON_HEADERS, send, TOKEN } from '../support/http.ts';
import {
  postgresAvailable,
  postgresTestStore,
  type TestStore,
  type TestStoreInstance,
  testStores,
  withPostgresClient,
} from '../support/stores.ts';

const OTHER_TOKEN = 'plant-store-other-token';
/** Both tokens, so that a key's scope can be seen; the first is `TOKEN`. */
const TOKENS_ENV = { API_TOKENS: `${TOKEN},${OTHER_TOKEN}` };
const TOKEN_NAME = configuredTokenName(TOKEN);
const IN_FLIGHT_MS = 1_000;

const REPLAYED = 'Idempotent-Replayed';
const IN_FLIGHT_MESSAGE =
  'A request with this Idempotency-Key is still being processed; retry it in a second.';
const OTHER_REQUEST_MESSAGE =
  'This Idempotency-Key was used for a different request; send a new key with a new request.';
const MALFORMED_MESSAGE =
  'The Idempotency-Key header must be a string of 1 to 255 printable ASCII characters, such as "8e03978e-40d5-43e8-bc93-6894a57f9324".';

/** An sf-string key, new for each call. */
const newKey = () => `"${crypto.randomUUID()}"`;

function create(url: string, body: string, key?: string, token = TOKEN): Promise<Answer> {
  const headers = { ...JSON_HEADERS, authorization: `Bearer ${token}` };
  return send(`${url}/plants`, {
    method: 'POST',
    headers: key === undefined ? headers : { ...headers, 'idempotency-key': key },
    body,
  });
}

function remove(url: string, id: bigint, key?: string): Promise<Answer> {
  const headers: Record<string, string> = { authorization: `Bearer ${TOKEN}` };
  if (key !== undefined) headers['idempotency-key'] = key;
  return send(`${url}/plants/${id}`, { method: 'DELETE', headers });
}

/** What a client sees of an answer: status, the replay mark, Retry-After and the body. */
function seen(answer: Answer) {
  return {
    status: answer.status,
    replayed: answer.headers.get(REPLAYED),
    retryAfter: answer.headers.get('retry-after'),
    text: answer.text,
  };
}

type KeyRow = { token_name: string; key: string; status: number | null; body: string | null };

/** The idempotency_keys table, read straight from the database, by key. */
async function keyRows(testStore: TestStore, store: TestStoreInstance): Promise<KeyRow[]> {
  const sql = 'SELECT token_name, key, status, body FROM idempotency_keys ORDER BY token_name, key';
  const url = store.env.DATABASE_URL!;
  if (testStore.name === 'postgres') return withPostgresClient(url, async (c) => (await c.query(sql)).rows);
  const db = new Database(url.slice('file:'.length), { readonly: true });
  try {
    return db.prepare<[], KeyRow>(sql).all();
  } finally {
    db.close();
  }
}

/** A claim as a request that died before its change left it, `agoMs` ago. */
async function insertClaim(
  testStore: TestStore,
  store: TestStoreInstance,
  claim: { key: string; fingerprint: string; agoMs: number },
): Promise<void> {
  const url = store.env.DATABASE_URL!;
  const values = [TOKEN_NAME, claim.key, claim.fingerprint, 'crashed-claim'];
  if (testStore.name === 'postgres') {
    await withPostgresClient(url, (c) =>
      c.query(
        `INSERT INTO idempotency_keys (token_name, key, fingerprint, claim, claimed_at)
         VALUES ($1, $2, $3, $4, now() - $5::bigint * interval '1 millisecond')`,
        [...values, claim.agoMs],
      ),
    );
    return;
  }
  const db = new Database(url.slice('file:'.length));
  try {
    db.pragma('busy_timeout = 5000');
    db.prepare(
      'INSERT INTO idempotency_keys (token_name, key, fingerprint, claim, claimed_at) VALUES (?, ?, ?, ?, ?)',
    ).run(...values, Date.now() - claim.agoMs);
  } finally {
    db.close();
  }
}

describe.each(testStores())('Idempotency-Key on $name', (testStore) => {
  let api: RunningApi;
  let store: TestStoreInstance;
  apiOnStore(testStore, (running) => ({ api, store } = running), {
    env: { ...TOKENS_ENV, IDEMPOTENCY_IN_FLIGHT_MS: String(IN_FLIGHT_MS) },
  });

  it('replays a create: the same key and body get the first answer, marked, and nothing changes', async () => {
    const key = newKey();
    const first = await create(api.url, '{"id":9007199254740993,"name":"Fern","tag":"herb"}', key);
    expect(seen(first)).toStrictEqual({
      status: 200,
      replayed: null,
      retryAfter: null,
      text: '{"name":"Fern","tag":"herb"}',
    });
    // The same request, its body written differently: the same fingerprint.
    const again = await create(api.url, '{ "tag": "herb", "name": "Fern", "id": 9007199254740993 }', key);
    expect(seen(again)).toStrictEqual({
      status: 200,
      replayed: 'true',
      retryAfter: null,
      text: '{"name":"Fern","tag":"herb"}',
    });
    expect(again.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(await store.ids()).toStrictEqual([9007199254740993n]);
    expect((await keyRows(testStore, store)).filter((row) => `"${row.key}"` === key)).toStrictEqual([
      { token_name: TOKEN_NAME, key: key.slice(1, -1), status: 200, body: '{"name":"Fern","tag":"herb"}' },
    ]);
  });

  it('without a key, or with a new one, a repeat is the 409 it always was', async () => {
    await create(api.url, '{"id":1,"name":"Moss"}', newKey());
    const conflict = errorBody(409, 'A plant with id 1 already exists.');
    expect(seen(await create(api.url, '{"id":1,"name":"Moss"}'))).toMatchObject({
      status: 409,
      replayed: null,
      text: conflict,
    });
    expect(seen(await create(api.url, '{"id":1,"name":"Moss"}', newKey()))).toMatchObject({
      status: 409,
      text: conflict,
    });
  });

  it('answers 422 to the same key with another body, method or path, and changes nothing', async () => {
    const key = newKey();
    expect((await create(api.url, '{"id":2,"name":"Ivy"}', key)).status).toBe(200);
    const unprocessable = {
      status: 422,
      replayed: null,
      retryAfter: null,
      text: errorBody(422, OTHER_REQUEST_MESSAGE),
    };
    expect(seen(await create(api.url, '{"id":3,"name":"Ivy"}', key))).toStrictEqual(unprocessable);
    expect(seen(await create(api.url, '{"id":2,"name":"Ivy","tag":"x"}', key))).toStrictEqual(unprocessable);
    expect(seen(await remove(api.url, 2n, key))).toStrictEqual(unprocessable);
    expect(await store.ids()).toContain(2n);
    expect(await store.ids()).not.toContain(3n);
  });

  it('answers 400 to a malformed key, before anything is stored', async () => {
    const before = await store.ids();
    const malformed = [
      '',
      '""',
      '"unterminated',
      'two words',
      '"a", "b"',
      `"${'k'.repeat(256)}"`,
      '"tab\there"',
      '"bad\\escape"',
    ];
    for (const key of malformed) {
      expect({ key, ...seen(await create(api.url, '{"id":4,"name":"Rue"}', key)) }).toStrictEqual({
        key,
        status: 400,
        replayed: null,
        retryAfter: null,
        text: errorBody(400, MALFORMED_MESSAGE),
      });
    }
    expect(seen(await remove(api.url, 2n, '"'))).toMatchObject({
      status: 400,
      text: errorBody(400, MALFORMED_MESSAGE),
    });
    expect(await store.ids()).toStrictEqual(before);
  });

  it('accepts a bare key as the same key as its sf-string', async () => {
    const key = crypto.randomUUID();
    expect((await create(api.url, '{"id":5,"name":"Sage"}', key)).status).toBe(200);
    expect(seen(await create(api.url, '{"id":5,"name":"Sage"}', `"${key}"`))).toMatchObject({
      status: 200,
      replayed: 'true',
    });
  });

  it('scopes keys to the token: another token with the same key is another request', async () => {
    const key = newKey();
    expect((await create(api.url, '{"id":6,"name":"Mint"}', key)).status).toBe(200);
    expect(seen(await create(api.url, '{"id":7,"name":"Mint"}', key, OTHER_TOKEN))).toMatchObject({
      status: 200,
      replayed: null,
    });
    expect(await store.ids()).toEqual(expect.arrayContaining([6n, 7n]));
  });

  it('replays a delete: 204 again, marked, where a repeat without the key is 404', async () => {
    await create(api.url, '{"id":8,"name":"Thyme"}');
    const key = newKey();
    expect(seen(await remove(api.url, 8n, key))).toStrictEqual({
      status: 204,
      replayed: null,
      retryAfter: null,
      text: '',
    });
    expect(seen(await remove(api.url, 8n, key))).toStrictEqual({
      status: 204,
      replayed: 'true',
      retryAfter: null,
      text: '',
    });
    expect((await remove(api.url, 8n)).status).toBe(404);
    expect(await store.ids()).not.toContain(8n);
  });

  it('frees the key of a request that failed: a retry runs again', async () => {
    await create(api.url, '{"id":9,"name":"Basil"}');
    const key = newKey();
    expect(seen(await create(api.url, '{"id":9,"name":"Basil"}', key))).toMatchObject({
      status: 409,
      replayed: null,
    });
    expect((await keyRows(testStore, store)).some((row) => `"${row.key}"` === key)).toBe(false);
    expect((await remove(api.url, 9n)).status).toBe(204);
    expect(seen(await create(api.url, '{"id":9,"name":"Basil"}', key))).toMatchObject({
      status: 200,
      replayed: null,
    });
  });

  it('answers 409 with Retry-After while a claim is in flight, and lets a repeat take over a stale one', async () => {
    const key = crypto.randomUUID();
    const fingerprint = fingerprintOf(createPlant, { id: 10n, name: 'Dill' });
    await insertClaim(testStore, store, { key, fingerprint, agoMs: 0 });
    expect(seen(await create(api.url, '{"id":10,"name":"Dill"}', `"${key}"`))).toStrictEqual({
      status: 409,
      replayed: null,
      retryAfter: '1',
      text: errorBody(409, IN_FLIGHT_MESSAGE),
    });
    // Another request under a held key is refused as such, in flight or not.
    expect((await create(api.url, '{"id":11,"name":"Dill"}', `"${key}"`)).status).toBe(422);
    expect(await store.ids()).not.toContain(10n);
    // The claim's process died: past IDEMPOTENCY_IN_FLIGHT_MS the same request takes the key over.
    await sleep(IN_FLIGHT_MS + 100);
    expect(seen(await create(api.url, '{"id":10,"name":"Dill"}', `"${key}"`))).toMatchObject({
      status: 200,
      replayed: null,
    });
    expect(seen(await create(api.url, '{"id":10,"name":"Dill"}', `"${key}"`))).toMatchObject({
      status: 200,
      replayed: 'true',
    });
    expect(await store.ids()).toContain(10n);
  });

  it('makes one change for concurrent repeats of one key: every answer is the first one or 409 in flight', async () => {
    for (const id of [100n, 101n, 102n]) {
      const key = newKey();
      const body = `{"id":${id},"name":"Aloe"}`;
      const answers = (await Promise.all(Array.from({ length: 12 }, () => create(api.url, body, key)))).map(
        seen,
      );
      const original = { status: 200, replayed: null, retryAfter: null, text: '{"name":"Aloe"}' };
      const replay = { ...original, replayed: 'true' };
      const inFlight = {
        status: 409,
        replayed: null,
        retryAfter: '1',
        text: errorBody(409, IN_FLIGHT_MESSAGE),
      };
      expect(answers.filter((answer) => answer.replayed === null && answer.status === 200)).toStrictEqual([
        original,
      ]);
      for (const answer of answers) expect([original, replay, inFlight]).toContainEqual(answer);
      expect(seen(await create(api.url, body, key))).toStrictEqual(replay);
      expect((await store.ids()).filter((stored) => stored === id)).toStrictEqual([id]);
    }
  });

  it('takes the key of a one-call /trpc mutation from its header, and replays across transports', async () => {
    const key = newKey();
    const trpc = (path: string, body: string, headers: Record<string, string>) =>
      send(`${api.url}/trpc/${path}`, { method: 'POST', headers: { ...JSON_HEADERS, ...headers }, body });
    const input = '{"json":{"id":"12","name":"Fern"},"meta":{"values":{"id":["bigint"]}}}';
    const first = await trpc('plants.create', input, { 'idempotency-key': key });
    expect(first.status).toBe(200);
    expect(first.json).toStrictEqual({ result: { data: { json: { name: 'Fern' } } } });
    // The same request over REST: replayed.
    expect(seen(await create(api.url, '{"id":12,"name":"Fern"}', key))).toMatchObject({
      status: 200,
      replayed: 'true',
    });
    const replayed = await trpc('plants.create', input, { 'idempotency-key': key });
    expect({ json: replayed.json, replayed: replayed.headers.get(REPLAYED) }).toStrictEqual({
      json: first.json,
      replayed: 'true',
    });
    const other = await trpc(
      'plants.create',
      '{"json":{"id":"13","name":"Fern"},"meta":{"values":{"id":["bigint"]}}}',
      { 'idempotency-key': key },
    );
    expect(other.status).toBe(422);
    // A key names one request: a batch of two calls with one key is refused.
    const batch = await trpc('plants.create,plants.create?batch=1', `{"0":${input},"1":${input}}`, {
      'idempotency-key': newKey(),
    });
    expect(batch.status).toBe(400);
    expect(JSON.stringify(batch.json)).toContain('An Idempotency-Key names one call');
    expect(await store.ids()).toContain(12n);
    expect(await store.ids()).not.toContain(13n);
  });
});

describe.each(testStores())('Idempotency-Keys expire on $name', (testStore) => {
  let api: RunningApi;
  let store: TestStoreInstance;
  apiOnStore(testStore, (running) => ({ api, store } = running), {
    env: { IDEMPOTENCY_TTL_MS: '1000', IDEMPOTENCY_IN_FLIGHT_MS: '500' },
  });

  it('forgets a key after IDEMPOTENCY_TTL_MS and prunes it', async () => {
    const key = newKey();
    expect((await create(api.url, '{"id":1,"name":"Fern"}', key)).status).toBe(200);
    expect(await keyRows(testStore, store)).toHaveLength(1);
    await sleep(1_100);
    // Expired: another request may use the key now.
    expect(seen(await create(api.url, '{"id":2,"name":"Fern"}', key))).toMatchObject({
      status: 200,
      replayed: null,
    });
    // The pruning runs every TTL (1 s here): the expired row goes.
    const deadline = Date.now() + 5_000;
    while ((await keyRows(testStore, store)).length > 0 && Date.now() < deadline) await sleep(200);
    expect(await keyRows(testStore, store)).toStrictEqual([]);
    expect(await store.ids()).toStrictEqual([1n, 2n]);
  });
});

describe.each(testStores())('a stored answer survives with its change on $name', (testStore) => {
  it('after a clean restart and after SIGKILL', async () => {
    const store = await testStore.setup();
    let api = await startApiProcess({ env: store.env });
    const dataDir = api.dataDir;
    try {
      const key = newKey();
      expect((await create(api.url, '{"id":1,"name":"Fern"}', key)).status).toBe(200);
      expect(await api.stop()).toBe(0);
      api = await startApiProcess({ env: store.env, dataDir });
      expect(seen(await create(api.url, '{"id":1,"name":"Fern"}', key))).toMatchObject({
        status: 200,
        replayed: 'true',
        text: '{"name":"Fern"}',
      });

      const killed = newKey();
      expect((await create(api.url, '{"id":2,"name":"Rose"}', killed)).status).toBe(200);
      await api.kill();
      api = await startApiProcess({ env: store.env, dataDir });
      expect(seen(await create(api.url, '{"id":2,"name":"Rose"}', killed))).toMatchObject({
        status: 200,
        replayed: 'true',
        text: '{"name":"Rose"}',
      });
      expect(await store.ids()).toStrictEqual([1n, 2n]);
    } finally {
      await api.stop();
      api.cleanup();
      await store.teardown();
    }
  });

  it('after SIGKILL under keyed load: a plant is stored exactly when its key holds its answer', async () => {
    const store = await testStore.setup();
    let api = await startApiProcess({ env: store.env });
    const dataDir = api.dataDir;
    const acknowledged = new Map<bigint, string>();
    const sent = new Map<bigint, string>();
    let killed = false;
    let next = 1_000n;
    const client = async () => {
      while (!killed) {
        const id = next++;
        const key = crypto.randomUUID();
        sent.set(id, key);
        try {
          if ((await create(api.url, `{"id":${id},"name":"Fern"}`, key)).status === 200)
            acknowledged.set(id, key);
        } catch {
          // The connection died with the process: not acknowledged.
        }
      }
    };
    try {
      const clients = Array.from({ length: 8 }, client);
      // Kill once creates are being acknowledged (a busy machine may take a while to get there).
      const until = Date.now() + 10_000;
      do await sleep(250);
      while (acknowledged.size < 20 && Date.now() < until);
      killed = true;
      await api.kill();
      await Promise.all(clients);
      expect(acknowledged.size).toBeGreaterThan(0);
      api = await startApiProcess({ env: store.env, dataDir });
      const ids = new Set(await store.ids());
      const answered = new Map(
        (await keyRows(testStore, store)).filter((row) => row.status !== null).map((row) => [row.key, row]),
      );
      for (const [id, key] of sent) {
        // The change and its answer committed together, or neither did.
        expect({ id, stored: ids.has(id), answered: answered.has(key) }).toStrictEqual({
          id,
          stored: ids.has(id),
          answered: ids.has(id),
        });
      }
      for (const [id, key] of [...acknowledged].slice(0, 20)) {
        expect(seen(await create(api.url, `{"id":${id},"name":"Fern"}`, key))).toMatchObject({
          status: 200,
          replayed: 'true',
        });
      }
    } finally {
      await api.stop();
      api.cleanup();
      await store.teardown();
    }
  });
});

describe.skipIf(!postgresAvailable())(
  'Idempotency-Key across two instances on one PostgreSQL database',
  () => {
    it('replays on one instance what the other answered, and makes one change for repeats spread over both', async () => {
      const store = await postgresTestStore.setup();
      const a = await startApiProcess({ env: store.env });
      const b = await startApiProcess({ env: store.env });
      try {
        const key = newKey();
        expect((await create(a.url, '{"id":1,"name":"Fern"}', key)).status).toBe(200);
        expect(seen(await create(b.url, '{"id":1,"name":"Fern"}', key))).toMatchObject({
          status: 200,
          replayed: 'true',
          text: '{"name":"Fern"}',
        });
        expect((await create(b.url, '{"id":2,"name":"Fern"}', key)).status).toBe(422);

        for (const id of [10n, 11n, 12n]) {
          const concurrent = newKey();
          const body = `{"id":${id},"name":"Aloe"}`;
          const answers = (
            await Promise.all(
              Array.from({ length: 12 }, (_, i) => create(i % 2 ? a.url : b.url, body, concurrent)),
            )
          ).map(seen);
          expect(answers.filter((answer) => answer.status === 200 && answer.replayed === null)).toHaveLength(
            1,
          );
          for (const answer of answers) {
            expect(
              (answer.status === 200 && answer.text === '{"name":"Aloe"}') ||
                (answer.status === 409 && answer.text === errorBody(409, IN_FLIGHT_MESSAGE)),
            ).toBe(true);
          }
        }
        expect(await store.ids()).toStrictEqual([1n, 10n, 11n, 12n]);
      } finally {
        await Promise.all([a.stop(), b.stop()]);
        a.cleanup();
        b.cleanup();
        await store.teardown();
      }
    });
  },
);

describe.each(testStores())('the $name store keeps one change per key', (testStore) => {
  it("enqueues a keyed create's webhook deliveries with it, and none for a duplicate id", async () => {
    const instance = await testStore.setup();
    const store = await openStore(loadConfig({ ...instance.env, API_TOKENS: TOKEN }).store);
    try {
      const policy = { inFlightMs: 10_000, ttlMs: 60_000 };
      const delivery = (id: string) => ({ id, url: 'http://127.0.0.1:9/hook', payload: '{"id":5}' });
      for (const claim of ['first', 'second']) {
        expect(
          (
            await store.idempotencyKeys.claim({
              tokenName: 'a',
              key: claim,
              claim,
              fingerprint: 'f',
              ...policy,
            })
          ).state,
        ).toBe('claimed');
      }
      const answer = (claim: string) => ({ tokenName: 'a', key: claim, claim, status: 200, body: '{}' });
      expect(
        await store.create(
          { id: 5n, name: 'Fern' },
          { outbox: { deliveries: [delivery('msg_1')] }, key: answer('first') },
        ),
      ).toEqual(expect.any(BigInt));
      expect(
        await store.create(
          { id: 5n, name: 'Fern' },
          { outbox: { deliveries: [delivery('msg_2')] }, key: answer('second') },
        ),
      ).toBe(false);
      expect((await instance.deliveries()).map((row) => row.id)).toStrictEqual(['msg_1']);
      // The duplicate stored no answer: its key is still in flight, for its request to free.
      expect(
        await store.idempotencyKeys.claim({
          tokenName: 'a',
          key: 'second',
          claim: 'x',
          fingerprint: 'f',
          ...policy,
        }),
      ).toStrictEqual({ state: 'in_flight', fingerprint: 'f' });
    } finally {
      await store.close();
      await instance.teardown();
    }
  });

  it('commits a keyed change only while its request holds the key, and frees only its own claim', async () => {
    const instance = await testStore.setup();
    const store = await openStore(loadConfig({ ...instance.env, API_TOKENS: TOKEN }).store);
    try {
      const policy = { inFlightMs: 200, ttlMs: 60_000 };
      const key = { tokenName: 'a', key: 'k' };
      const slow = { ...key, claim: 'slow' };
      const fast = { ...key, claim: 'fast' };
      expect(await store.idempotencyKeys.claim({ ...slow, fingerprint: 'f', ...policy })).toStrictEqual({
        state: 'claimed',
      });
      expect(await store.idempotencyKeys.claim({ ...fast, fingerprint: 'f', ...policy })).toStrictEqual({
        state: 'in_flight',
        fingerprint: 'f',
      });
      // The first request stalls past the in-flight bound: a repeat takes the key over.
      await sleep(300);
      expect(await store.idempotencyKeys.claim({ ...fast, fingerprint: 'other', ...policy })).toStrictEqual({
        state: 'in_flight',
        fingerprint: 'f',
      });
      expect(await store.idempotencyKeys.claim({ ...fast, fingerprint: 'f', ...policy })).toStrictEqual({
        state: 'claimed',
      });
      // The stalled request comes back: its change is refused, and it cannot free the key it lost.
      const answer = (claim: typeof slow) => ({ ...claim, status: 200, body: '{"name":"Fern"}' });
      await expect(store.create({ id: 1n, name: 'Fern' }, { key: answer(slow) })).rejects.toBeInstanceOf(
        KeyClaimLostError,
      );
      await store.idempotencyKeys.release(slow);
      expect(await store.get(1n)).toBeUndefined();
      const version = await store.create({ id: 1n, name: 'Fern' }, { key: answer(fast) });
      expect(version).toEqual(expect.any(BigInt));
      expect(await store.idempotencyKeys.claim({ ...slow, fingerprint: 'f', ...policy })).toStrictEqual({
        state: 'completed',
        fingerprint: 'f',
        answer: { status: 200, body: '{"name":"Fern"}', version },
      });
      // A completed key is never freed, nor taken over before it expires.
      await store.idempotencyKeys.release(fast);
      await sleep(300);
      expect((await store.idempotencyKeys.claim({ ...slow, fingerprint: 'f', ...policy })).state).toBe(
        'completed',
      );
      await expect(store.delete(1n, { key: answer(slow) })).rejects.toBeInstanceOf(KeyClaimLostError);
      expect(await store.get(1n)).toStrictEqual({ id: 1n, name: 'Fern', version: expect.any(BigInt) });
      expect(await store.idempotencyKeys.prune({ olderThanMs: 0, limit: 10 })).toBe(1);
      expect(await store.idempotencyKeys.prune({ olderThanMs: 0, limit: 10 })).toBe(0);
    } finally {
      await store.close();
      await instance.teardown();
    }
  });
});
