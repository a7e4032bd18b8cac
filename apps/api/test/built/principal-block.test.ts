import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { importJWK, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runApiCommand, startApiProcess } from '../support/api-process.ts';
import { deferAfterEach } from '../support/cleanups.ts';
import { errorBody, postPlant, send } from '../support/http.ts';
import { AUDIENCE, startProvider, type TestProvider } from '../support/oidc-provider.ts';
import { openSse } from '../support/sse.ts';
import { type TestStoreInstance, testStores } from '../support/stores.ts';
import { startReceiver } from '../support/webhook-receiver.ts';

/**
 * Issue 43 point 2 on the built service, on both stores (two instances on PostgreSQL): blocking a
 * principal of an identity provider cuts its requests, open streams (SSE and tRPC) and webhook
 * endpoints on every instance within TOKEN_REFRESH_MS, as revoking a token does (revocation.test.ts).
 */

const REFRESH_MS = 500;
const POLL_MS = 200;
const SLACK_MS = 1_500;
const SECRETS_KEY = randomBytes(32).toString('base64');
const INVALID = errorBody(401, 'The bearer token is not valid.');
const SCOPE = 'plants:read plants:write plants:webhooks';

const defer = deferAfterEach();
let provider: TestProvider;
beforeAll(async () => {
  provider = await startProvider();
});
afterAll(() => provider.close());

const bearer = (token: string) => ({ authorization: `Bearer ${token}`, 'content-type': 'application/json' });

/** An access token of the provider for `subject` (signed with its key, as it signs them). */
async function tokenOf(subject: string): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const key = provider.keys[0]!;
  return new SignJWT({
    iss: provider.issuer,
    aud: AUDIENCE,
    sub: subject,
    iat: now,
    exp: now + 300,
    scope: SCOPE,
  })
    .setProtectedHeader({ alg: 'ES256', kid: key.kid!, typ: 'at+jwt' })
    .sign(await importJWK(key, 'ES256'));
}

function admin(store: TestStoreInstance, ...args: string[]) {
  return runApiCommand(args, store.env).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number; stdout: string; stderr: string }) => ({
      code: error.code,
      stdout: error.stdout,
      stderr: error.stderr,
    }),
  );
}

async function until(condition: () => Promise<boolean> | boolean, timeoutMs = 10_000): Promise<number> {
  const started = performance.now();
  while (!(await condition())) {
    if (performance.now() - started > timeoutMs) throw new Error(`condition not met within ${timeoutMs} ms`);
    await sleep(20);
  }
  return performance.now() - started;
}

async function startApi(store: TestStoreInstance) {
  const api = await startApiProcess({
    env: {
      ...store.env,
      OIDC_ISSUER: provider.issuer,
      OIDC_AUDIENCE: AUDIENCE,
      TOKEN_REFRESH_MS: String(REFRESH_MS),
      EVENTS_POLL_MS: String(POLL_MS),
      WEBHOOK_ALLOW_PRIVATE_URLS: '1',
      WEBHOOK_SECRETS_KEY: SECRETS_KEY,
      WEBHOOK_POLL_INTERVAL_MS: '50',
    },
  });
  defer(async () => {
    await api.stop();
    api.cleanup();
  });
  return api;
}

describe.each(testStores())('blocking a principal on the built service on $name', (testStore) => {
  it('cuts its requests, SSE and tRPC streams on every instance within TOKEN_REFRESH_MS, disables its endpoints; unblock lets it back', async () => {
    const store = await testStore.setup();
    defer(() => store.teardown());
    const apis = [await startApi(store)];
    if (testStore.name === 'postgres') apis.push(await startApi(store));
    const carol = await tokenOf('carol');
    const dave = await tokenOf('dave');
    const owner = `${provider.issuer}#carol`;

    const hook = await startReceiver(() => 'unused');
    defer(() => hook.close());
    const registered = await send(`${apis[0]!.url}/webhook-endpoints`, {
      method: 'POST',
      headers: bearer(carol),
      body: JSON.stringify({ url: `${hook.url}/carol` }),
    });
    expect(registered.status).toBe(201);
    const endpointId = (registered.json as { id: string }).id;

    const streams = [];
    for (const api of apis) {
      expect((await send(`${api.url}/plants`, { headers: bearer(carol) })).status).toBe(200);
      streams.push(await openSse(`${api.url}/plants/events`, { authorization: `Bearer ${carol}` }));
    }
    const kept = await openSse(`${apis[0]!.url}/plants/events`, { authorization: `Bearer ${dave}` });
    for (const stream of [...streams, kept]) {
      expect(stream.status).toBe(200);
      defer(() => stream.close());
    }
    const controller = new AbortController();
    defer(() => controller.abort());
    const input = encodeURIComponent(JSON.stringify({ json: {} }));
    const trpc = await fetch(`${apis.at(-1)!.url}/trpc/plants.events?input=${input}`, {
      headers: { authorization: `Bearer ${carol}` },
      signal: controller.signal,
    });
    expect(trpc.status).toBe(200);
    let text = '';
    const reading = (async () => {
      const decoder = new TextDecoder();
      for await (const chunk of trpc.body!) text += decoder.decode(chunk as Uint8Array, { stream: true });
    })().catch(() => {});
    expect((await postPlant(apis[0]!.url, '{"id":1,"name":"Before"}', bearer(carol))).status).toBe(200);
    for (const stream of streams) await stream.waitFor(1);
    await until(() => text.includes('"Before"'));

    const blocked = await admin(
      store,
      'principal',
      'block',
      '--issuer',
      provider.issuer,
      '--subject',
      'carol',
    );
    const blockedAt = performance.now();
    expect(blocked).toStrictEqual({
      code: 0,
      stdout: '',
      stderr: `Principal "carol" of ${provider.issuer} blocked, and its 1 webhook endpoint disabled; running instances refuse its tokens, and end its event streams, within TOKEN_REFRESH_MS.\n`,
    });
    expect(await Promise.all(streams.map((stream) => stream.ended))).toStrictEqual(apis.map(() => 'end'));
    await reading;
    expect(performance.now() - blockedAt).toBeLessThan(REFRESH_MS + POLL_MS + SLACK_MS);
    for (const stream of streams) expect(stream.comments.at(-1)).toBe('closed: the token was revoked');
    expect(text).toContain('"message":"The bearer token was revoked."');
    for (const api of apis) {
      const refused = await send(`${api.url}/plants`, { headers: bearer(carol) });
      expect([refused.status, refused.text]).toStrictEqual([401, INVALID]);
      // A fresh token of the same subject is refused too: the block is on the principal.
      expect((await send(`${api.url}/plants`, { headers: bearer(await tokenOf('carol')) })).status).toBe(401);
      expect((await send(`${api.url}/plants`, { headers: bearer(dave) })).status).toBe(200);
    }
    expect((await postPlant(apis[0]!.url, '{"id":2,"name":"After"}', bearer(dave))).status).toBe(200);
    await kept.waitFor(2);
    expect(streams.map((stream) => stream.events.length)).toStrictEqual(apis.map(() => 1));

    const [row] = await store.rows(
      `SELECT owner, disabled_reason FROM webhook_endpoints WHERE id = '${endpointId}'`,
    );
    expect(row).toStrictEqual({ owner, disabled_reason: 'token_revoked' });
    expect(await admin(store, 'webhooks', 'enable', '--id', endpointId)).toStrictEqual({
      code: 1,
      stdout: '',
      stderr: `Webhook endpoint ${endpointId} stays disabled: its principal "carol" of ${provider.issuer} is blocked.\n`,
    });
    // Delivered to before the block; nothing after it.
    await sleep(1_000);
    expect(hook.received.filter((request) => request.body.includes('After'))).toStrictEqual([]);
    expect(hook.received.filter((request) => request.body.includes('Before')).length).toBeGreaterThan(0);
    const listed = await admin(store, 'principal', 'list');
    expect(JSON.parse(listed.stdout)).toStrictEqual({
      issuer: provider.issuer,
      subject: 'carol',
      blockedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
    expect(
      (await admin(store, 'principal', 'block', '--issuer', provider.issuer, '--subject', 'carol')).stderr,
    ).toBe(`Principal "carol" of ${provider.issuer} is already blocked.\n`);

    expect(
      (await admin(store, 'principal', 'unblock', '--issuer', provider.issuer, '--subject', 'carol')).code,
    ).toBe(0);
    for (const api of apis) {
      await until(
        async () => (await send(`${api.url}/plants`, { headers: bearer(carol) })).status === 200,
        REFRESH_MS + SLACK_MS,
      );
    }
  });

  it('refuses wrong usage: no issuer, a repeated --issuer, no subject (exit 2, nothing done)', async () => {
    const store = await testStore.setup();
    defer(() => store.teardown());
    const cases = [
      ['principal', 'block', '--subject', 'x'],
      ['principal', 'block', '--issuer', provider.issuer, '--issuer', provider.issuer, '--subject', 'x'],
      ['principal', 'unblock', '--issuer', provider.issuer],
    ];
    const outcomes = [];
    for (const args of cases) outcomes.push(await admin(store, ...args));
    expect(outcomes.map(({ code, stderr }) => [code, stderr.split('\n')[0]])).toStrictEqual([
      [2, '--issuer is required: the issuer URL exactly as tokens name it (their iss claim)'],
      [2, '--issuer takes one value: give it once'],
      [2, '--subject is required'],
    ]);
    expect((await admin(store, 'principal', 'list')).stdout).toBe('');
  });
});
