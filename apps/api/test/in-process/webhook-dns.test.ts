import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { deferAfterEach } from '../support/cleanups.ts';
import { type FakeDns, startFakeDns } from '../support/fake-dns.ts';
import { send } from '../support/http.ts';
import { type RunningApi, startInProcess } from '../support/in-process.ts';
import { startReceiver } from '../support/webhook-receiver.ts';

/**
 * How endpoints' host names are resolved (webhooks/dns.ts): through WEBHOOK_DNS_SERVERS with c-ares,
 * within caps per token and per instance, and not at all when the endpoint cap is reached. The
 * target is the resolver, not a table: SQLite only.
 */

const TOKENS = ['first-token-0123456789', 'second-token-0123456789', 'third-token-0123456789'] as const;
const [FIRST, SECOND, THIRD] = TOKENS;
const as = (token: string) => ({ authorization: `Bearer ${token}`, 'content-type': 'application/json' });

const defer = deferAfterEach();

async function withDns(): Promise<FakeDns> {
  const dns = await startFakeDns();
  defer(() => dns.close());
  return dns;
}

async function startApi(dns: FakeDns, env: Record<string, string> = {}): Promise<RunningApi> {
  const api = await startInProcess({
    token: TOKENS.join(','),
    env: {
      WEBHOOK_ALLOW_PRIVATE_URLS: '1',
      WEBHOOK_POLL_INTERVAL_MS: '50',
      WEBHOOK_DNS_SERVERS: dns.server,
      ...env,
    },
  });
  defer(async () => {
    await api.stop();
    api.cleanup();
  });
  return api;
}

const register = (api: RunningApi, token: string, url: string) =>
  send(`${api.url}/webhook-endpoints`, { method: 'POST', headers: as(token), body: JSON.stringify({ url }) });

describe('endpoint host lookups', () => {
  it('checks the endpoint cap before any lookup: 409 at once, and no question reaches the name server', async () => {
    const dns = await withDns();
    const api = await startApi(dns, { WEBHOOK_ENDPOINTS_PER_TOKEN: '1' });
    expect((await register(api, FIRST, 'http://127.0.0.1:9/one')).status).toBe(201);
    const started = performance.now();
    const refused = await register(api, FIRST, 'http://capped.stall.test:9/two');
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(refused.status).toBe(409);
    expect(refused.json).toStrictEqual({
      error: 409,
      message: 'This token already has 1 webhook endpoints, the most allowed; delete one first.',
    });
    // A malformed URL is still a 400, before the cap.
    expect((await register(api, FIRST, 'gopher://capped.stall.test/')).status).toBe(400);
    await sleep(100);
    expect(dns.queries).toStrictEqual([]);
  });

  it('asks WEBHOOK_DNS_SERVERS for A and AAAA, and nobody for IP literals and localhost (loopback)', async () => {
    const dns = await withDns();
    let secret = '';
    const hook = await startReceiver(() => secret);
    defer(() => hook.close());
    dns.answer('hooks.test', '127.0.0.1');
    const api = await startApi(dns);
    for (const url of [
      `http://127.0.0.1:${hook.port}/a`,
      `http://[::1]:${hook.port}/b`,
      'http://localhost:9/c',
    ]) {
      expect([url, (await register(api, FIRST, url)).status]).toStrictEqual([url, 201]);
    }
    expect(dns.queries).toStrictEqual([]);
    const named = await register(api, SECOND, `http://hooks.test:${hook.port}/hook`);
    expect(named.status).toBe(201);
    secret = (named.json as { secret: string }).secret;
    expect(dns.queries.map(({ name, type }) => `${name} ${type}`).sort()).toStrictEqual([
      'hooks.test A',
      'hooks.test AAAA',
    ]);
    // Its deliveries connect through the same resolver: a ping arrives.
    const ping = await send(`${api.url}/webhook-endpoints/${(named.json as { id: string }).id}/ping`, {
      method: 'POST',
      headers: as(SECOND),
    });
    expect(ping.status).toBe(202);
    await hook.waitFor((received) => received.some((request) => request.event === 'webhook.ping'), 5_000);
    expect(hook.received.find((request) => request.event === 'webhook.ping')).toMatchObject({
      path: '/hook',
      verified: true,
    });
    // A name that does not exist is refused with the policy's message, asked of the same server.
    const missing = await register(api, THIRD, 'http://missing.test:9/');
    expect(missing.json).toStrictEqual({
      error: 400,
      message: 'url: the host missing.test could not be resolved',
    });
  });

  it('answers 429 past the token’s lookups and 503 past the instance’s, with Retry-After; slots free at WEBHOOK_DNS_TIMEOUT_MS', async () => {
    const dns = await withDns();
    dns.answer('ok.test', '127.0.0.1');
    const api = await startApi(dns, {
      WEBHOOK_DNS_TIMEOUT_MS: '1500',
      WEBHOOK_DNS_CONCURRENCY: '2',
      WEBHOOK_DNS_CONCURRENCY_PER_TOKEN: '1',
    });
    const first = register(api, FIRST, 'http://a.stall.test:9/');
    await sleep(100);
    const again = await register(api, FIRST, 'http://b.stall.test:9/');
    expect(again.status).toBe(429);
    expect(again.headers.get('retry-after')).toBe('2');
    expect(again.json).toStrictEqual({
      error: 429,
      message:
        'This token has the most host lookups in flight allowed (WEBHOOK_DNS_CONCURRENCY_PER_TOKEN); retry later.',
    });
    const second = register(api, SECOND, 'http://c.stall.test:9/');
    await sleep(100);
    const third = await register(api, THIRD, 'http://ok.test:9/');
    expect(third.status).toBe(503);
    expect(third.headers.get('retry-after')).toBe('2');
    expect(third.json).toStrictEqual({
      error: 503,
      message:
        'This instance has the most host lookups in flight allowed (WEBHOOK_DNS_CONCURRENCY); retry later.',
    });
    // A name already being looked up takes no slot of its own: it joins the lookup in flight.
    const joined = register(api, THIRD, 'http://a.stall.test:9/joined');
    const timedOut = 'could not be resolved within 1.5 s';
    for (const answer of await Promise.all([first, second, joined])) {
      expect(answer.json).toStrictEqual({ error: 400, message: expect.stringContaining(timedOut) });
    }
    expect((await register(api, THIRD, 'http://ok.test:9/')).status).toBe(201);
    expect(dns.namesAsked(/stall/).sort()).toStrictEqual(['a.stall.test', 'c.stall.test']);
  });
});
