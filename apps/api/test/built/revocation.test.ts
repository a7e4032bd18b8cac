import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { configuredTokenName, newTokenSecret, tokenDigest } from '../../src/auth/tokens.ts';
import { Database } from '../../src/store/sqlite/driver.ts';
import { secretBox } from '../../src/webhooks/secrets.ts';
import { type ApiProcess, runApiCommand, startApiProcess } from '../support/api-process.ts';
import { deferAfterEach } from '../support/cleanups.ts';
import { errorBody, postPlant, send, TOKEN, TOKEN_NAME } from '../support/http.ts';
import { openSse } from '../support/sse.ts';
import { type TestStoreInstance, testStores, withPostgresClient } from '../support/stores.ts';
import { freePort, type Receiver, startReceiver } from '../support/webhook-receiver.ts';

/**
 * Issue 22, rows 1-3 and the `webhooks`-without-`read` question, on the built service (what
 * operators run), on both stores: what a revocation, a token dropped from API_TOKENS and data of
 * earlier versions do to endpoints, deliveries and open streams (docs/principals.md).
 */

const REFRESH_MS = 500;
/** How often the hub reads the log without a notification: "one poll" of the bound. */
const POLL_MS = 200;
/** What a loaded 2-core machine may add to a bound. */
const SLACK_MS = 1_500;
const SECRETS_KEY = randomBytes(32).toString('base64');
const OTHER = 'plant-store-other-token-0123456789';
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

type Endpoint = { id: string; secret: string };
type Outcome = { code: number; stdout: string; stderr: string };

const defer = deferAfterEach();

const bearer = (secret: string) => ({
  authorization: `Bearer ${secret}`,
  'content-type': 'application/json',
});

/** An admin command of the built api against the test's store, with its exit code. */
function admin(store: TestStoreInstance, ...args: string[]): Promise<Outcome> {
  return runApiCommand(args, store.env).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: Outcome) => ({ code: error.code, stdout: error.stdout, stderr: error.stderr }),
  );
}

/** `webhooks endpoints`, parsed: one object per endpoint. */
async function listed(store: TestStoreInstance): Promise<Record<string, unknown>[]> {
  const { stdout } = await admin(store, 'webhooks', 'endpoints');
  return stdout
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line));
}

async function until(condition: () => Promise<boolean> | boolean, timeoutMs = 10_000): Promise<number> {
  const started = performance.now();
  while (!(await condition())) {
    if (performance.now() - started > timeoutMs) throw new Error(`condition not met within ${timeoutMs} ms`);
    await sleep(20);
  }
  return performance.now() - started;
}

async function startApi(store: TestStoreInstance, env: Record<string, string> = {}, token = TOKEN) {
  const api = await startApiProcess({
    token,
    env: {
      ...store.env,
      TOKEN_REFRESH_MS: String(REFRESH_MS),
      EVENTS_POLL_MS: String(POLL_MS),
      WEBHOOK_ALLOW_PRIVATE_URLS: '1',
      WEBHOOK_SECRETS_KEY: SECRETS_KEY,
      WEBHOOK_POLL_INTERVAL_MS: '50',
      WEBHOOK_BACKOFF_BASE_MS: '50',
      WEBHOOK_BACKOFF_MAX_MS: '200',
      WEBHOOK_TIMEOUT_MS: '1000',
      WEBHOOK_LEASE_MS: '1500',
      // A receiver down for a while must not open the breaker: what follows would wait for it.
      WEBHOOK_BREAKER_FAILURES: '1000',
      ...env,
    },
  });
  // Stopped in the test (a restart) or after it, once.
  const stopProcess = api.stop;
  let stopped: Promise<number | null> | undefined;
  const stop = () => {
    stopped ??= stopProcess();
    return stopped;
  };
  defer(async () => {
    await stop();
    api.cleanup();
  });
  return Object.assign(api, { stop });
}

async function receiver(...args: Parameters<typeof startReceiver>): Promise<Receiver> {
  const started = await startReceiver(...args);
  defer(() => started.close());
  return started;
}

async function register(api: ApiProcess, secret: string, url: string): Promise<Endpoint> {
  const answer = await send(`${api.url}/webhook-endpoints`, {
    method: 'POST',
    headers: bearer(secret),
    body: JSON.stringify({ url }),
  });
  expect([answer.status, answer.text]).toStrictEqual([201, expect.any(String)]);
  return answer.json as Endpoint;
}

/** Issues a token with `scopes` and waits until the api accepts it. */
async function issue(store: TestStoreInstance, api: ApiProcess, name: string, scopes: string[]) {
  const created = await admin(
    store,
    'token',
    'create',
    '--name',
    name,
    ...scopes.flatMap((s) => ['--scope', s]),
  );
  expect(created.code).toBe(0);
  const secret = created.stdout.trim();
  await until(
    async () => (await send(`${api.url}/webhook-endpoints`, { headers: bearer(secret) })).status !== 401,
  );
  return secret;
}

describe.each(testStores())('revocation on the built service on $name', (testStore) => {
  const setup = async () => {
    const store = await testStore.setup();
    defer(() => store.teardown());
    return store;
  };

  it('row 1: a revoked token’s endpoint is sent nothing more, neither what was pending nor later plants, and shows disabled', async () => {
    const store = await setup();
    const api = await startApi(store);
    const acme = await issue(store, api, 'acme', ['read', 'webhooks']);
    // The receiver is down at first: the first plant's delivery is pending, retried, at revocation.
    const port = await freePort();
    const endpoint = await register(api, acme, `http://127.0.0.1:${port}/hook`);
    expect((await postPlant(api.url, '{"id":1,"name":"Fern"}')).status).toBe(200);
    await until(async () => {
      const [row] = await store.rows(
        `SELECT attempts FROM webhook_deliveries WHERE endpoint_id = '${endpoint.id}'`,
      );
      return Number(row?.attempts ?? 0) >= 1;
    });

    const revoked = await admin(store, 'token', 'revoke', '--name', 'acme');
    expect(revoked.code).toBe(0);
    const hook = await receiver(() => endpoint.secret, { port });
    await sleep(3_000);
    expect((await postPlant(api.url, '{"id":2,"name":"Moss"}')).status).toBe(200);
    await sleep(1_500);
    expect(hook.received).toStrictEqual([]);
    expect(revoked).toStrictEqual({
      code: 0,
      stdout: '',
      stderr:
        'Token "acme" revoked, and its 1 webhook endpoint disabled; running instances stop accepting it, and end its event streams, within TOKEN_REFRESH_MS.\n',
    });

    expect((await send(`${api.url}/webhook-endpoints`, { headers: bearer(acme) })).status).toBe(401);
    expect(await listed(store)).toStrictEqual([
      {
        id: endpoint.id,
        owner: 'acme',
        // The listing shows URLs by origin: a path can hold a secret.
        url: `http://127.0.0.1:${port}`,
        description: null,
        createdAt: expect.stringMatching(ISO),
        disabled: { at: expect.stringMatching(ISO), reason: 'token_revoked' },
        pending: 0,
        failed: 1,
      },
    ]);
    const [failed] = await store.rows(
      `SELECT status, last_error FROM webhook_deliveries WHERE endpoint_id = '${endpoint.id}'`,
    );
    expect(failed).toStrictEqual({ status: 'failed', last_error: 'endpoint disabled (token_revoked)' });
    // Its owner is revoked: an operator cannot make it deliver again.
    expect(await admin(store, 'webhooks', 'enable', '--id', endpoint.id)).toStrictEqual({
      code: 1,
      stdout: '',
      stderr: `Webhook endpoint ${endpoint.id} stays disabled: its token "acme" is revoked.\n`,
    });
  });

  it('row 2: a revoked token’s event streams end within TOKEN_REFRESH_MS + one poll on every instance, SSE with a last comment saying why', async () => {
    const store = await setup();
    // Two instances where the store is shared (PostgreSQL); one on SQLite.
    const apis = [await startApi(store)];
    if (testStore.name === 'postgres') apis.push(await startApi(store));
    const reader = await issue(store, apis[0]!, 'reader', ['read']);
    for (const api of apis)
      await until(async () => (await send(`${api.url}/plants`, { headers: bearer(reader) })).status === 200);
    const revokedStreams = [];
    const keptStreams = [];
    for (const api of apis) {
      revokedStreams.push(await openSse(`${api.url}/plants/events`, { authorization: `Bearer ${reader}` }));
      keptStreams.push(await openSse(`${api.url}/plants/events`));
    }
    for (const stream of [...revokedStreams, ...keptStreams]) {
      expect(stream.status).toBe(200);
      defer(() => stream.close());
    }
    expect((await postPlant(apis[0]!.url, '{"id":1,"name":"Before"}')).status).toBe(200);
    for (const stream of revokedStreams) await stream.waitFor(1);

    expect((await admin(store, 'token', 'revoke', '--name', 'reader')).code).toBe(0);
    const revokedAt = performance.now();
    const ends = await Promise.all(revokedStreams.map((stream) => stream.ended));
    const took = performance.now() - revokedAt;
    expect(ends).toStrictEqual(apis.map(() => 'end'));
    expect(took).toBeLessThan(REFRESH_MS + POLL_MS + SLACK_MS);
    for (const stream of revokedStreams) expect(stream.comments.at(-1)).toBe('closed: the token was revoked');

    expect((await postPlant(apis[0]!.url, '{"id":2,"name":"After"}')).status).toBe(200);
    for (const stream of keptStreams) await stream.waitFor(2);
    await sleep(300);
    for (const stream of revokedStreams) {
      expect(
        stream.events.map((event) => (event.data as { plant: { name: string } }).plant.name),
      ).toStrictEqual(['Before']);
    }
    // Reconnecting (as EventSource does) is refused.
    const again = await openSse(`${apis[0]!.url}/plants/events`, { authorization: `Bearer ${reader}` });
    expect([again.status, again.body]).toStrictEqual([
      401,
      { error: 401, message: 'The bearer token is not valid.' },
    ]);
  });

  it('row 2 over tRPC: a revoked token’s plants.events subscription ends with UNAUTHORIZED, and gets no later plant', async () => {
    const store = await setup();
    const api = await startApi(store);
    const reader = await issue(store, api, 'reader', ['read']);
    await until(async () => (await send(`${api.url}/plants`, { headers: bearer(reader) })).status === 200);
    const controller = new AbortController();
    defer(() => controller.abort());
    const input = encodeURIComponent(JSON.stringify({ json: {} }));
    const response = await fetch(`${api.url}/trpc/plants.events?input=${input}`, {
      headers: { authorization: `Bearer ${reader}` },
      signal: controller.signal,
    });
    expect(response.status).toBe(200);
    let text = '';
    const reading = (async () => {
      const decoder = new TextDecoder();
      for await (const chunk of response.body!) text += decoder.decode(chunk as Uint8Array, { stream: true });
    })().catch(() => {});
    expect((await postPlant(api.url, '{"id":1,"name":"Before"}')).status).toBe(200);
    await until(() => text.includes('"Before"'));

    expect((await admin(store, 'token', 'revoke', '--name', 'reader')).code).toBe(0);
    const revokedAt = performance.now();
    await reading;
    expect(performance.now() - revokedAt).toBeLessThan(REFRESH_MS + POLL_MS + SLACK_MS);
    expect(text).toContain('event: serialized-error\n');
    const error = text.split('\n').find((line) => line.startsWith('data: {"json":{"message"'));
    expect(JSON.parse(error!.slice('data: '.length))).toStrictEqual({
      json: {
        message: 'The bearer token was revoked.',
        code: -32001,
        data: { code: 'UNAUTHORIZED', httpStatus: 401, path: 'plants.events' },
      },
    });
    expect((await postPlant(api.url, '{"id":2,"name":"After"}')).status).toBe(200);
    await sleep(500);
    expect(text).not.toContain('"After"');
  });

  it('row 3: a token dropped from API_TOKENS owns nothing the others can see, its endpoint gets nothing, and names do not depend on order', async () => {
    const store = await setup();
    const [a, b] = [TOKEN, OTHER];
    const [nameA, nameB] = [configuredTokenName(a), configuredTokenName(b)];
    const endpoints: Record<string, Endpoint> = {};
    const hook = await receiver(() => endpoints.a!.secret);

    const first = await startApi(store, {}, `${a},${b}`);
    endpoints.a = await register(first, a, `${hook.url}/a`);
    expect((await postPlant(first.url, '{"id":1,"name":"Fern"}')).status).toBe(200);
    await hook.waitFor((received) => received.length === 1);
    await first.stop();

    // B alone: A's endpoint is not B's to see or change, and A's gets no deliveries.
    const second = await startApi(store, {}, b);
    const asB = bearer(b);
    expect((await send(`${second.url}/webhook-endpoints`, { headers: asB })).json).toStrictEqual([]);
    const notFound = errorBody(404, `There is no webhook endpoint with id ${endpoints.a.id}.`);
    for (const method of ['GET', 'DELETE']) {
      const answer = await send(`${second.url}/webhook-endpoints/${endpoints.a.id}`, {
        method,
        headers: asB,
      });
      expect([method, answer.status, answer.text]).toStrictEqual([method, 404, notFound]);
    }
    expect((await listed(store)).map(({ id, owner }) => ({ id, owner }))).toStrictEqual([
      { id: endpoints.a.id, owner: nameA },
    ]);
    expect((await postPlant(second.url, '{"id":2,"name":"Moss"}', asB)).status).toBe(200);
    await until(async () => (await listed(store))[0]?.disabled !== null);
    expect((await listed(store))[0]).toMatchObject({
      owner: nameA,
      disabled: { reason: 'token_inactive' },
      pending: 0,
      failed: 1,
    });
    // An operator enabling it does not make it deliver while its token is not configured.
    expect(await admin(store, 'webhooks', 'enable', '--id', endpoints.a.id)).toMatchObject({ code: 0 });
    expect((await postPlant(second.url, '{"id":3,"name":"Ivy"}', asB)).status).toBe(200);
    await until(async () => (await listed(store))[0]?.disabled !== null);
    await sleep(1_000);
    expect(hook.received).toHaveLength(1);
    await second.stop();

    // A back, listed second: the same names as before, so A has its endpoint again (still
    // disabled), and once enabled it is delivered to.
    const third = await startApi(store, {}, `${b},${a}`);
    const own = await send(`${third.url}/webhook-endpoints/${endpoints.a.id}`, { headers: bearer(a) });
    expect(own.json).toMatchObject({ id: endpoints.a.id, disabled: { reason: 'token_inactive' } });
    await send(`${third.url}/plants?limit=1`, { headers: bearer(a), method: 'GET' });
    await send(`${third.url}/plants?limit=1`, { headers: asB });
    await until(() => third.logs.filter((line) => line.includes('"msg":"request"')).length >= 3);
    const names = third.logs
      .map((line) => JSON.parse(line))
      .filter((line) => line.msg === 'request' && line.route === '/plants')
      .map((line) => line.tokenName);
    expect(names).toStrictEqual([nameA, nameB]);
    expect((await admin(store, 'webhooks', 'enable', '--id', endpoints.a.id)).code).toBe(0);
    expect((await postPlant(third.url, '{"id":4,"name":"Palm"}')).status).toBe(200);
    await hook.waitFor((received) => received.length === 2);
    expect(hook.received.map((request) => [request.verified, request.body])).toStrictEqual([
      [true, '{"id":1,"name":"Fern"}'],
      [true, '{"id":4,"name":"Palm"}'],
    ]);
  });

  it('data of earlier versions: an endpoint of a positional name is disabled, never anyone’s; one of a webhooks-only token is not delivered to', async () => {
    const store = await setup();
    expect((await admin(store, 'migrate', '--to', '7')).code).toBe(0);
    const hooksToken = newTokenSecret();
    const box = secretBox(Buffer.from(SECRETS_KEY, 'base64'));
    const secret = () => `whsec_${randomBytes(24).toString('base64')}`;
    const secrets = { legacy: secret(), hooks: secret() };
    const ids = { legacy: `we_${'1'.repeat(24)}`, hooks: `we_${'2'.repeat(24)}` };
    const hook = await receiver(() => secrets.legacy);
    const now = testStore.name === 'postgres' ? 'now()' : String(Date.now());
    // As version 7 stored them: the first token of API_TOKENS was `api-token-1`, and a token with
    // only the webhooks scope could register.
    const sql = `
      INSERT INTO api_tokens (name, digest, scopes, created_at) VALUES ('hooks', '${tokenDigest(hooksToken)}', 'webhooks', ${now});
      INSERT INTO webhook_endpoints (id, owner, url, secret, created_at) VALUES
        ('${ids.legacy}', 'api-token-1', '${hook.url}/legacy', '${box.seal(secrets.legacy, ids.legacy)}', ${now}),
        ('${ids.hooks}', 'hooks', '${hook.url}/hooks', '${box.seal(secrets.hooks, ids.hooks)}', ${now});
      INSERT INTO webhook_deliveries (id, endpoint_id, url, payload, next_attempt_at, created_at, updated_at) VALUES
        ('msg_${'3'.repeat(32)}', '${ids.legacy}', '${hook.url}/legacy', '{"id":0,"name":"Old"}', ${now}, ${now}, ${now})`;
    await exec(store, sql);

    const api = await startApi(store);
    // The token now named `api-token-1`'s successor sees nothing of it.
    expect((await send(`${api.url}/webhook-endpoints`, { headers: bearer(TOKEN) })).json).toStrictEqual([]);
    await until(
      async () =>
        (await send(`${api.url}/webhook-endpoints`, { headers: bearer(hooksToken) })).status === 200,
    );
    // A webhooks-only token registers nothing new…
    const refused = await send(`${api.url}/webhook-endpoints`, {
      method: 'POST',
      headers: bearer(hooksToken),
      body: JSON.stringify({ url: `${hook.url}/new` }),
    });
    expect([refused.status, refused.text]).toStrictEqual([
      403,
      errorBody(403, 'This token lacks the read scope this operation needs.'),
    ]);
    // …and what it registered before gets no plant: the first delivery round disables it.
    expect((await postPlant(api.url, '{"id":1,"name":"Fern"}')).status).toBe(200);
    await until(async () => {
      const [own] = (await send(`${api.url}/webhook-endpoints`, { headers: bearer(hooksToken) })).json as {
        disabled: unknown;
      }[];
      return own?.disabled !== null;
    });
    await sleep(1_000);
    expect(hook.received).toStrictEqual([]);
    const [own] = (await send(`${api.url}/webhook-endpoints`, { headers: bearer(hooksToken) }))
      .json as unknown[];
    expect(own).toMatchObject({
      id: ids.hooks,
      disabled: { at: expect.stringMatching(ISO), reason: 'token_lacks_read' },
    });
    expect(
      (await listed(store)).map(({ id, owner, disabled, pending, failed }) => ({
        id,
        owner,
        reason: (disabled as { reason: string } | null)?.reason,
        pending,
        failed,
      })),
    ).toStrictEqual([
      { id: ids.legacy, owner: 'api-token-1', reason: 'legacy_owner', pending: 0, failed: 1 },
      { id: ids.hooks, owner: 'hooks', reason: 'token_lacks_read', pending: 0, failed: 1 },
    ]);
    expect(await admin(store, 'webhooks', 'enable', '--id', ids.legacy)).toStrictEqual({
      code: 1,
      stdout: '',
      stderr: `Webhook endpoint ${ids.legacy} stays disabled: its token name "api-token-1" is one of an earlier version, which no token has now.\n`,
    });
    expect(await admin(store, 'webhooks', 'enable', '--id', ids.hooks)).toStrictEqual({
      code: 1,
      stdout: '',
      stderr: `Webhook endpoint ${ids.hooks} stays disabled: its token "hooks" lacks the read scope.\n`,
    });
    expect(await admin(store, 'token', 'create', '--name', 'api-token-1')).toMatchObject({ code: 2 });
  });

  it('admin commands disable, enable and delete any endpoint, with their messages and exit codes', async () => {
    const store = await setup();
    const api = await startApi(store);
    let endpoint: Endpoint | undefined;
    const hook = await receiver(() => endpoint!.secret);
    endpoint = await register(api, TOKEN, `${hook.url}/hook`);
    const { id } = endpoint;
    const run = (...args: string[]) => admin(store, 'webhooks', ...args);

    expect(await run('disable', '--id', id)).toStrictEqual({
      code: 0,
      stdout: '',
      stderr: `Webhook endpoint ${id} disabled: nothing more is sent to it, and its pending deliveries failed.\n`,
    });
    expect(await run('disable', '--id', id)).toStrictEqual({
      code: 0,
      stdout: '',
      stderr: `Webhook endpoint ${id} is already disabled (operator).\n`,
    });
    expect((await postPlant(api.url, '{"id":1,"name":"Fern"}')).status).toBe(200);
    await sleep(1_000);
    expect(hook.received).toStrictEqual([]);
    expect((await listed(store))[0]).toMatchObject({
      id,
      owner: TOKEN_NAME,
      disabled: { reason: 'operator' },
    });

    expect(await run('enable', '--id', id)).toStrictEqual({
      code: 0,
      stdout: '',
      stderr: `Webhook endpoint ${id} enabled: new plants are delivered to it while its token "${TOKEN_NAME}" is active with the read scope.\n`,
    });
    expect(await run('enable', '--id', id)).toStrictEqual({
      code: 0,
      stdout: '',
      stderr: `Webhook endpoint ${id} is not disabled.\n`,
    });
    expect((await postPlant(api.url, '{"id":2,"name":"Moss"}')).status).toBe(200);
    await hook.waitFor((received) => received.length === 1);
    expect(hook.received[0]).toMatchObject({ verified: true, body: '{"id":2,"name":"Moss"}' });

    expect(await run('delete', '--id', id)).toStrictEqual({
      code: 0,
      stdout: '',
      stderr: `Webhook endpoint ${id} deleted, with its deliveries.\n`,
    });
    expect(await store.rows(`SELECT id FROM webhook_deliveries WHERE endpoint_id = '${id}'`)).toStrictEqual(
      [],
    );
    expect((await send(`${api.url}/webhook-endpoints/${id}`, { headers: bearer(TOKEN) })).status).toBe(404);
    for (const command of ['disable', 'enable', 'delete']) {
      expect(await run(command, '--id', id)).toStrictEqual({
        code: 1,
        stdout: '',
        stderr: `No webhook endpoint with id "${id}".\n`,
      });
    }
    const usage = [
      [['disable'], '--id is required'],
      [['enable', '--id', 'we_1'], '--id must be a webhook endpoint id (we_ and 24 hex digits)'],
      [['delete', '--id', id, '--owner', 'x'], "Unknown option '--owner'"],
    ] as const;
    for (const [args, message] of usage) {
      const outcome = await run(...args);
      expect([args, outcome.code, outcome.stderr.split('\n')[0]]).toStrictEqual([
        args,
        2,
        expect.stringContaining(message),
      ]);
      expect(outcome.stderr).toContain('Usage: main.js [command]');
    }
  });
});

/** Runs SQL on the test's database, past the api (as an earlier version wrote it). */
async function exec(store: TestStoreInstance, sql: string): Promise<void> {
  const url = store.env.DATABASE_URL!;
  if (!url.startsWith('file:')) {
    await withPostgresClient(url, async (client) => {
      await client.query(sql);
    });
    return;
  }
  const db = new Database(url.slice('file:'.length));
  try {
    db.exec(sql);
  } finally {
    db.close();
  }
}
