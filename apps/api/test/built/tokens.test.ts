import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { Database } from '../../src/store/sqlite/driver.ts';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { send } from '../support/http.ts';
import { type RunningApi, startInProcess } from '../support/in-process.ts';
import { type TestStoreInstance, testStores } from '../support/stores.ts';

const MAIN = new URL('../../dist/main.js', import.meta.url).pathname;
const REFRESH_MS = 200;
/** The configured token (API_TOKENS) beside the issued ones. */
const CONFIG_TOKEN = 'plant-store-config-token';

/** Every row of api_tokens, straight from the database. */
async function tokenRows(env: Record<string, string>): Promise<Record<string, unknown>[]> {
  const url = env.DATABASE_URL!;
  if (url.startsWith('file:')) {
    const db = new Database(url.slice('file:'.length), { readonly: true });
    try {
      return db.prepare('SELECT * FROM api_tokens').all() as Record<string, unknown>[];
    } finally {
      db.close();
    }
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query('SELECT * FROM api_tokens')).rows;
  } finally {
    await client.end();
  }
}

async function eventually(check: () => Promise<boolean>, withinMs: number): Promise<number> {
  const started = performance.now();
  while (!(await check())) {
    if (performance.now() - started > withinMs) throw new Error(`not within ${withinMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return performance.now() - started;
}

describe.each(testStores())('issued tokens on $name', (testStore) => {
  let store: TestStoreInstance;
  let apis: RunningApi[] = [];
  // The admin CLI as an operator runs it, built: what it prints and its exit codes are tested here.
  const admin = (...args: string[]) =>
    promisify(execFile)(process.execPath, [MAIN, ...args], {
      env: { PATH: process.env.PATH ?? '', API_TOKENS: CONFIG_TOKEN, ...store.env },
    });

  beforeAll(async () => {
    store = await testStore.setup();
    const env = { ...store.env, TOKEN_REFRESH_MS: String(REFRESH_MS), API_TOKENS: CONFIG_TOKEN };
    // Two instances where the store is shared (PostgreSQL); one on SQLite.
    apis = [await startInProcess({ env, token: CONFIG_TOKEN })];
    if (testStore.name === 'postgres') apis.push(await startInProcess({ env, token: CONFIG_TOKEN }));
  });
  afterAll(async () => {
    for (const api of apis) {
      await api.stop();
      api.cleanup();
    }
    await store?.teardown();
  });

  it('issues a token shown once, stored only as its SHA-256 digest, accepted by every instance with its scope', async () => {
    const created = await admin('token', 'create', '--name', 'reporting', '--scope', 'read');
    const secret = created.stdout.trim();
    expect(secret).toMatch(/^pst_[A-Za-z0-9_-]{43}$/);
    expect(created.stderr).toContain('shown only this once');

    const rows = await tokenRows(store.env);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      name: 'reporting',
      scopes: 'read',
      digest: createHash('sha256').update(secret).digest('hex'),
    });
    expect(JSON.stringify(rows)).not.toContain(secret);

    const listed = await admin('token', 'list');
    expect(JSON.parse(listed.stdout.trim())).toEqual({
      name: 'reporting',
      scopes: ['read'],
      createdAt: expect.any(String),
      revokedAt: null,
    });
    expect(listed.stdout).not.toContain(secret);

    for (const api of apis) {
      const auth = { authorization: `Bearer ${secret}`, 'content-type': 'application/json' };
      await eventually(
        async () => (await send(`${api.url}/plants`, { headers: auth })).status === 200,
        REFRESH_MS * 10,
      );
      const create = await send(`${api.url}/plants`, {
        method: 'POST',
        headers: auth,
        body: '{"id":1,"name":"Fern"}',
      });
      expect(create.status).toBe(403);
    }
    expect(await store.ids()).toEqual([]);
  });

  it('stops accepting a revoked token on every instance within the refresh bound, and API_TOKENS keeps working', async () => {
    const secret = (await admin('token', 'create', '--name', 'ci-bot')).stdout.trim();
    const auth = { authorization: `Bearer ${secret}`, 'content-type': 'application/json' };
    for (const api of apis) {
      await eventually(
        async () => (await send(`${api.url}/plants`, { headers: auth })).status === 200,
        REFRESH_MS * 10,
      );
    }
    const revoked = await admin('token', 'revoke', '--name', 'ci-bot');
    expect(revoked.stderr).toContain('revoked');
    for (const api of apis) {
      const took = await eventually(
        async () => (await send(`${api.url}/plants`, { headers: auth })).status === 401,
        REFRESH_MS * 10,
      );
      expect(took).toBeLessThan(REFRESH_MS * 10);
      expect(
        (await send(`${api.url}/plants`, { headers: { authorization: `Bearer ${CONFIG_TOKEN}` } })).status,
      ).toBe(200);
    }
    const listed = (await admin('token', 'list')).stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(listed.find((token) => token.name === 'ci-bot').revokedAt).toEqual(expect.any(String));
  });

  it('issues a token with the metrics scope, which scrapes /metrics and reads no plant; a read token gets 403 there', async () => {
    const scraper = (
      await admin('token', 'create', '--name', 'prometheus', '--scope', 'metrics')
    ).stdout.trim();
    const reader = (await admin('token', 'create', '--name', 'dashboard', '--scope', 'read')).stdout.trim();
    for (const api of apis) {
      const scrape = (secret: string) =>
        send(`${api.url}/metrics`, { headers: { authorization: `Bearer ${secret}` } });
      await eventually(async () => (await scrape(scraper)).status === 200, REFRESH_MS * 10);
      await eventually(async () => (await scrape(reader)).status !== 401, REFRESH_MS * 10);
      expect((await scrape(scraper)).text).toContain('plant_store_http_requests_total');
      expect((await scrape(reader)).status).toBe(403);
      const plants = await send(`${api.url}/plants`, { headers: { authorization: `Bearer ${scraper}` } });
      expect(plants.status).toBe(403);
    }
    const listed = (await admin('token', 'list')).stdout;
    expect(listed).toContain('{"name":"prometheus","scopes":["metrics"],');
  });

  it('refuses a second token of the same name and bad usage', async () => {
    await expect(admin('token', 'create', '--name', 'reporting')).rejects.toMatchObject({ code: 1 });
    await expect(admin('token', 'create', '--name', 'x', '--scope', 'admin')).rejects.toMatchObject({
      code: 2,
    });
    await expect(admin('token', 'create')).rejects.toMatchObject({ code: 2 });
    await expect(admin('token', 'revoke', '--name', 'nobody')).rejects.toMatchObject({ code: 1 });
  });
});
