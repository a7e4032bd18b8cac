import { createHmac, createPublicKey } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { type JWK, importJWK, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deferAfterEach } from '../support/cleanups.ts';
import { errorBody, send } from '../support/http.ts';
import { startInProcess } from '../support/in-process.ts';
import { openSse } from '../support/sse.ts';
import {
  AUDIENCE,
  OTHER_AUDIENCE,
  signingKey,
  startProvider,
  type TestProvider,
} from '../support/oidc-provider.ts';

/**
 * Issue 43 point 1: the api accepts JWT access tokens of the configured issuers, checked against a
 * real OpenID provider on loopback (oidc-provider), beside opaque tokens.
 */

const defer = deferAfterEach();
const INVALID = errorBody(401, 'The bearer token is not valid.');

let provider: TestProvider;
beforeAll(async () => {
  provider = await startProvider();
});
afterAll(() => provider.close());

async function startApi(issuer: string, env: Record<string, string> = {}) {
  const api = await startInProcess({ env: { OIDC_ISSUER: issuer, OIDC_AUDIENCE: AUDIENCE, ...env } });
  defer(async () => {
    await api.stop();
    api.cleanup();
  });
  return api;
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}`, 'content-type': 'application/json' });

/** A token signed with one of the provider's own keys, with any claims: what the provider would never issue. */
async function forge(key: JWK, claims: Record<string, unknown>, header: Record<string, unknown> = {}) {
  const now = Math.floor(Date.now() / 1000);
  const payload = {
    iss: provider.issuer,
    aud: AUDIENCE,
    sub: 'alice',
    iat: now,
    exp: now + 300,
    scope: 'plants:read plants:write',
  };
  return new SignJWT({ ...payload, ...claims })
    .setProtectedHeader({ alg: 'ES256', kid: key.kid!, typ: 'at+jwt', ...header })
    .sign(await importJWK(key, 'ES256'));
}

describe('JWT access tokens of a configured issuer', () => {
  it('accepts a client-credentials token of the provider: its scopes map to ours, its principal is issuer#client', async () => {
    const api = await startApi(provider.issuer);
    const token = await provider.clientCredentials();
    const created = await send(`${api.url}/plants`, {
      method: 'POST',
      headers: bearer(token),
      body: '{"id":1,"name":"Fern"}',
    });
    expect(created.status).toBe(200);
    expect((await send(`${api.url}/plants/1`, { headers: bearer(token) })).json).toStrictEqual({
      id: 1,
      name: 'Fern',
      version: 1,
    });
    const line = api.logs.map((l) => JSON.parse(l)).find((l) => l.msg === 'request' && l.method === 'POST');
    expect(line.tokenName).toBe(`${provider.issuer}#partner`);
    // Opaque tokens keep working beside them.
    expect((await send(`${api.url}/plants/1`, { headers: bearer('plant-store-test-token') })).status).toBe(
      200,
    );
  });

  it('names a token without sub by its client_id, else its azp; one with none of them is refused', async () => {
    const api = await startApi(provider.issuer);
    const key = provider.keys[0]!;
    const tokens = [
      await forge(key, { sub: undefined, client_id: 'svc-1' }),
      await forge(key, { sub: undefined, azp: 'svc-2' }),
      await forge(key, { sub: undefined }),
    ];
    const statuses = [];
    for (const token of tokens)
      statuses.push((await send(`${api.url}/plants`, { headers: bearer(token) })).status);
    expect(statuses).toStrictEqual([200, 200, 401]);
    const names = api.logs
      .map((l) => JSON.parse(l))
      .filter((l) => l.msg === 'request')
      .map((l) => l.tokenName);
    expect(names).toStrictEqual([`${provider.issuer}#svc-1`, `${provider.issuer}#svc-2`, '-']);
  });

  it('grants only the mapped scopes: plants:read alone reads, and a write is 403', async () => {
    const api = await startApi(provider.issuer);
    const token = await provider.clientCredentials({ scope: 'plants:read' });
    expect((await send(`${api.url}/plants`, { headers: bearer(token) })).status).toBe(200);
    const refused = await send(`${api.url}/plants`, {
      method: 'POST',
      headers: bearer(token),
      body: '{"id":2,"name":"Moss"}',
    });
    expect([refused.status, refused.text]).toStrictEqual([
      403,
      errorBody(403, 'This token lacks the write scope this operation needs.'),
    ]);
  });

  it('maps scopes by the issuer’s scopeMap when OIDC_ISSUERS gives one', async () => {
    const api = await startInProcess({
      env: {
        OIDC_ISSUERS: JSON.stringify([
          { issuer: provider.issuer, audience: AUDIENCE, scopeMap: { 'plants:webhooks': ['read', 'write'] } },
        ]),
      },
    });
    defer(async () => {
      await api.stop();
      api.cleanup();
    });
    const writer = await provider.clientCredentials({ scope: 'plants:webhooks' });
    const reader = await provider.clientCredentials({ scope: 'plants:read' });
    expect(
      (
        await send(`${api.url}/plants`, {
          method: 'POST',
          headers: bearer(writer),
          body: '{"id":3,"name":"Ivy"}',
        })
      ).status,
    ).toBe(200);
    expect((await send(`${api.url}/plants`, { headers: bearer(reader) })).status).toBe(403);
  });

  it('refuses a wrong audience, a wrong issuer, an expired token, alg none and HS256 signed with the public key', async () => {
    const api = await startApi(provider.issuer);
    const other = await startProvider();
    defer(() => other.close());
    const key = provider.keys[0]!;
    const now = Math.floor(Date.now() / 1000);
    const payload = Buffer.from(
      JSON.stringify({
        iss: provider.issuer,
        aud: AUDIENCE,
        sub: 'alice',
        exp: now + 300,
        scope: 'plants:read',
      }),
    ).toString('base64url');
    const publicPem = createPublicKey({ key: { ...key, d: undefined }, format: 'jwk' }).export({
      type: 'spki',
      format: 'pem',
    });
    const hsHeader = Buffer.from(JSON.stringify({ alg: 'HS256', kid: key.kid, typ: 'at+jwt' })).toString(
      'base64url',
    );
    const hs256 = `${hsHeader}.${payload}.${createHmac('sha256', publicPem).update(`${hsHeader}.${payload}`).digest('base64url')}`;
    const none = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${payload}.`;
    const refused = {
      'wrong audience': await provider.clientCredentials({ resource: OTHER_AUDIENCE }),
      'wrong issuer': await other.clientCredentials(),
      'expired past the 60 s tolerance': await forge(key, { exp: now - 61 - 5 }),
      'not before, past the tolerance': await forge(key, { nbf: now + 120 }),
      'another typ': await forge(key, {}, { typ: 'logout+jwt' }),
      'no exp': await new SignJWT({ scope: 'plants:read' })
        .setProtectedHeader({ alg: 'ES256', kid: key.kid! })
        .setIssuer(provider.issuer)
        .setAudience(AUDIENCE)
        .setSubject('alice')
        .sign(await importJWK(key, 'ES256')),
      'alg none': none,
      'HS256 with the public key': hs256,
    };
    const answers: Record<string, unknown> = {};
    for (const [what, token] of Object.entries(refused)) {
      const answer = await send(`${api.url}/plants`, { headers: bearer(token) });
      answers[what] = [answer.status, answer.text];
    }
    expect(answers).toStrictEqual(
      Object.fromEntries(Object.keys(refused).map((what) => [what, [401, INVALID]])),
    );
    // Within the tolerance, the clocks' skew is forgiven.
    expect(
      (await send(`${api.url}/plants`, { headers: bearer(await forge(key, { exp: now - 30 })) })).status,
    ).toBe(200);
  });

  it('a principal is issuer and subject: another subject sees none of its endpoints, and its Idempotency-Keys are its own', async () => {
    const api = await startApi(provider.issuer, { WEBHOOK_ALLOW_PRIVATE_URLS: '1' });
    const key = provider.keys[0]!;
    const scope = 'plants:read plants:write plants:webhooks';
    const alice = await forge(key, { scope });
    const bob = await forge(key, { scope, sub: 'bob' });
    const endpoint = await send(`${api.url}/webhook-endpoints`, {
      method: 'POST',
      headers: bearer(alice),
      body: '{"url":"http://127.0.0.1:9/hook"}',
    });
    expect(endpoint.status).toBe(201);
    const id = (endpoint.json as { id: string }).id;
    expect((await send(`${api.url}/webhook-endpoints/${id}`, { headers: bearer(alice) })).status).toBe(200);
    expect((await send(`${api.url}/webhook-endpoints/${id}`, { headers: bearer(bob) })).status).toBe(404);
    const keyed = (token: string, body: string) =>
      send(`${api.url}/plants`, {
        method: 'POST',
        headers: { ...bearer(token), 'idempotency-key': 'k-1' },
        body,
      });
    expect((await keyed(alice, '{"id":10,"name":"A"}')).status).toBe(200);
    // The same key from another principal is another request: not a replay, not a conflict.
    expect((await keyed(bob, '{"id":11,"name":"B"}')).status).toBe(200);
    expect((await keyed(alice, '{"id":10,"name":"A"}')).headers.get('idempotent-replayed')).toBe('true');
  });
});

describe('a JWT principal’s event stream', () => {
  it('ends within TOKEN_REFRESH_MS once its token expires (past the clock tolerance), as a revoked token’s does', async () => {
    const api = await startApi(provider.issuer, { TOKEN_REFRESH_MS: '200' });
    const now = Math.floor(Date.now() / 1000);
    // Expired 57 s ago: accepted for 3 more seconds of the 60 s tolerance.
    const token = await forge(provider.keys[0]!, { exp: now - 57 });
    const stream = await openSse(`${api.url}/plants/events`, { authorization: `Bearer ${token}` });
    defer(() => stream.close());
    expect(stream.status).toBe(200);
    const fresh = await forge(provider.keys[0]!, { sub: 'bob' });
    const kept = await openSse(`${api.url}/plants/events`, { authorization: `Bearer ${fresh}` });
    defer(() => kept.close());
    const opened = performance.now();
    expect(await stream.ended).toBe('end');
    expect(performance.now() - opened).toBeLessThan(3_000 + 200 + 1_500);
    expect(stream.comments.at(-1)).toBe('closed: the token was revoked');
    expect((await send(`${api.url}/plants`, { headers: bearer(token) })).status).toBe(401);
    const created = await send(`${api.url}/plants`, {
      method: 'POST',
      headers: bearer(fresh),
      body: '{"id":7,"name":"Kept"}',
    });
    expect(created.status).toBe(200);
    await kept.waitFor(1);
  });
});

describe('the issuer’s keys', () => {
  it('a flood of made-up kids fetches the JWKS no more than once per 30 s cooldown, and valid tokens still pass', async () => {
    // Without the per-address limit on failed authentications, which would answer 429 first.
    const api = await startApi(provider.issuer, { AUTH_FAILURE_MAX: '0' });
    expect(
      (await send(`${api.url}/plants`, { headers: bearer(await provider.clientCredentials()) })).status,
    ).toBe(200);
    const before = provider.jwksFetches();
    const stranger = await signingKey('stranger');
    const statuses = new Set<number>();
    for (let i = 0; i < 200; i++) {
      const token = await forge({ ...stranger, kid: `made-up-${i}` }, { jti: String(i) });
      statuses.add((await send(`${api.url}/plants`, { headers: bearer(token) })).status);
    }
    expect([...statuses]).toStrictEqual([401]);
    expect(provider.jwksFetches() - before).toBe(0);
    expect(
      (await send(`${api.url}/plants`, { headers: bearer(await provider.clientCredentials()) })).status,
    ).toBe(200);
  });

  it('with the issuer down, known keys verify new tokens and a new key is refused; once back, a rotated key works without a restart', async () => {
    const first = await startProvider();
    const api = await startApi(first.issuer, { OIDC_JWKS_COOLDOWN_MS: '1000' });
    const old = first.keys[0]!;
    expect(
      (await send(`${api.url}/plants`, { headers: bearer(await first.clientCredentials()) })).status,
    ).toBe(200);
    await first.close();

    const iss = { iss: first.issuer };
    const next = await signingKey('key-2');
    const seenKey = await forge(old, { ...iss, jti: 'a' });
    const newKey = await forge(next, { ...iss, jti: 'b' });
    expect((await send(`${api.url}/plants`, { headers: bearer(seenKey) })).status).toBe(200);
    expect((await send(`${api.url}/plants`, { headers: bearer(newKey) })).status).toBe(401);
    await sleep(1_100);
    // Past the JWKS cache's age the known keys still serve while the issuer is down.
    expect(
      (await send(`${api.url}/plants`, { headers: bearer(await forge(old, { ...iss, jti: 'c' })) })).status,
    ).toBe(200);

    // The issuer comes back on the same address, signing with a new key beside the old one.
    const back = await startProvider({ port: first.port, keys: [next, old] });
    defer(() => back.close());
    await sleep(1_100);
    const rotated = await back.clientCredentials();
    expect(JSON.parse(Buffer.from(rotated.split('.')[0]!, 'base64url').toString()).kid).toBe('key-2');
    expect((await send(`${api.url}/plants`, { headers: bearer(rotated) })).status).toBe(200);
    expect((await send(`${api.url}/plants`, { headers: bearer(seenKey) })).status).toBe(200);
  });
});

describe('GET /auth/provider', () => {
  it('names the provider, public client, audience and scopes to sign in with, without a token', async () => {
    const api = await startApi(provider.issuer, { OIDC_CLIENT_ID: 'plant-console' });
    const answer = await send(`${api.url}/auth/provider`);
    expect([answer.status, answer.headers.get('content-type'), answer.json]).toStrictEqual([
      200,
      'application/json; charset=utf-8',
      {
        provider: {
          issuer: provider.issuer,
          clientId: 'plant-console',
          audience: AUDIENCE,
          scopes: [
            'openid',
            'offline_access',
            'plants:read',
            'plants:write',
            'plants:webhooks',
            'plants:metrics',
          ],
        },
      },
    ]);
  });

  it('answers {"provider":null} when no provider has a client id: sign in with a pasted token', async () => {
    const api = await startApi(provider.issuer);
    const answer = await send(`${api.url}/auth/provider`);
    expect([answer.status, answer.text]).toStrictEqual([200, '{"provider":null}']);
  });
});
