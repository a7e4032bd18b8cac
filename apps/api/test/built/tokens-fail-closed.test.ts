import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newTokenSecret, tokenDigest } from '../../src/auth/tokens.ts';
import { loadConfig } from '../../src/config/config.ts';
import { openStore } from '../../src/store/open-store.ts';
import { runApiCommand, startApiProcess } from '../support/api-process.ts';
import { errorBody, send, TOKEN, TOKEN_NAME } from '../support/http.ts';
import { type RunningApi, startInProcess } from '../support/in-process.ts';
import {
  postgresAvailable,
  postgresTestStore,
  type TestStoreInstance,
  testStores,
} from '../support/stores.ts';
import { startProxy } from '../support/tcp-proxy.ts';

const REFRESH_MS = 200;
/** Issued tokens are refused after this long without a successful reload (3 missed reloads). */
const STALE_MS = 3 * REFRESH_MS;
/** What we allow on top of a bound for scheduling on a loaded 2-core machine. */
const SLACK_MS = 1_500;
const INVALID = errorBody(401, 'The bearer token is not valid.');
const UNAVAILABLE = errorBody(503, 'The store is unavailable; retry the request later.');
const REFUSED =
  'tokens could not be reloaded: issued tokens are refused until a reload succeeds (API_TOKENS still work)';
const ACCEPTED = 'tokens reloaded: issued tokens are accepted again';

const admin = (env: Record<string, string>, ...args: string[]) => runApiCommand(args, env);

const getPlants = (api: RunningApi, secret: string) =>
  send(`${api.url}/plants?limit=1`, { headers: { authorization: `Bearer ${secret}` } });

async function eventually(check: () => Promise<boolean>, withinMs: number): Promise<void> {
  const deadline = performance.now() + withinMs;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error(`not within ${withinMs} ms`);
    await sleep(20);
  }
}

const count = (api: RunningApi, message: string) =>
  api.logs.filter((line) => line.includes(`"msg":"${message}"`)).length;

describe.each(testStores())('token names on $name', (testStore) => {
  let store: TestStoreInstance;
  let api: RunningApi;
  beforeAll(async () => {
    store = await testStore.setup();
    api = await startInProcess({ env: { ...store.env, TOKEN_REFRESH_MS: String(REFRESH_MS) } });
  });
  afterAll(async () => {
    await api?.stop();
    api?.cleanup();
    await store?.teardown();
  });

  it.each(['api-token-1', 'api-token-7', 'generated', TOKEN_NAME, 'api-token-0123456789ab'])(
    '`token create` refuses the configured name %s (exit 2) and stores nothing',
    async (name) => {
      const failed = admin(store.env, 'token', 'create', '--name', name);
      await expect(failed).rejects.toMatchObject({ code: 2 });
      const { stderr } = (await failed.catch((error) => error)) as { stderr: string };
      expect(stderr.split('\n')[0]).toBe(
        `--name "${name}" is reserved for configured tokens (api-token-<12 hex digits>, and api-token-N and generated of earlier versions)`,
      );
      expect(await admin(store.env, 'token', 'list')).toMatchObject({ stdout: '' });
    },
  );

  it('never accepts an issued token that holds a configured name (stored before names were checked)', async () => {
    const squatter = newTokenSecret();
    const legacySquatter = newTokenSecret();
    const reporting = newTokenSecret();
    const plants = await openStore(loadConfig({ ...store.env, API_TOKENS: TOKEN }).store);
    try {
      for (const [name, secret] of [
        [TOKEN_NAME, squatter],
        ['api-token-1', legacySquatter],
        ['reporting', reporting],
      ] as const) {
        expect(await plants.tokens.create({ name, digest: tokenDigest(secret), scopes: ['read'] })).toBe(
          true,
        );
      }
    } finally {
      await plants.close();
    }
    await eventually(async () => (await getPlants(api, reporting)).status === 200, REFRESH_MS * 10);
    for (const secret of [squatter, legacySquatter]) {
      const answer = await getPlants(api, secret);
      expect([answer.status, answer.text]).toEqual([401, INVALID]);
    }
    // The configured token keeps its name to itself.
    expect((await getPlants(api, TOKEN)).status).toBe(200);
    await sleep(100);
    const names = api.logs
      .map((line) => JSON.parse(line))
      .filter((line) => line.msg === 'request' && line.status === 200)
      .map((line) => line.tokenName);
    expect(new Set(names)).toEqual(new Set(['reporting', TOKEN_NAME]));
  });
});

describe.runIf(postgresAvailable())('issued tokens when PostgreSQL cannot be reached', () => {
  it('are refused after 3 missed reloads, while API_TOKENS keep working, and accepted again after a reload', async () => {
    const store = await postgresTestStore.setup();
    const url = new URL(store.env.DATABASE_URL!);
    const proxy = await startProxy({ host: url.hostname, port: Number(url.port || 5432) });
    const proxied = new URL(url);
    proxied.host = `127.0.0.1:${proxy.port}`;
    // Each store call, a reload included, may take up to 2 s: longer than the staleness bound.
    const api = await startApiProcess({
      env: {
        DATABASE_URL: proxied.href,
        TOKEN_REFRESH_MS: String(REFRESH_MS),
        DATABASE_TIMEOUT_MS: '2000',
        // This test polls with a refused token from one address: not the failed-authentication limit's test.
        AUTH_FAILURE_MAX: '0',
      },
    });
    try {
      const issued = (await admin(store.env, 'token', 'create', '--name', 'reporting')).stdout.trim();
      await eventually(async () => (await getPlants(api, issued)).status === 200, REFRESH_MS * 10);

      for (const [mode, outage] of [
        ['down', 1],
        ['blackhole', 2],
      ] as const) {
        proxy.setMode(mode);
        const cut = performance.now();
        // Still accepted at first (the store is what fails), then refused: 401 before the store.
        const answers: { status: number; text: string; at: number }[] = [];
        while (answers.at(-1)?.status !== 401) {
          const answer = await getPlants(api, issued);
          answers.push({ status: answer.status, text: answer.text, at: performance.now() - cut });
          expect(answers.at(-1)!.at).toBeLessThan(STALE_MS + 2_000 + SLACK_MS);
        }
        expect(answers[0]).toMatchObject({ status: 503, text: UNAVAILABLE });
        expect(answers.at(-1)).toMatchObject({ status: 401, text: INVALID });
        expect(answers.every((a) => a.status === 503 || a.status === 401)).toBe(true);
        // The configured token is still accepted: the request reaches the store, which is down.
        const configured = await getPlants(api, TOKEN);
        expect([configured.status, configured.text]).toEqual([503, UNAVAILABLE]);
        await eventually(async () => count(api, REFUSED) === outage, 2_000 + SLACK_MS);

        proxy.setMode('up');
        await eventually(async () => (await getPlants(api, issued)).status === 200, 5_000);
        await eventually(async () => count(api, ACCEPTED) === outage, 1_000);
      }
      // Logged once per outage, not once per failed reload or request.
      expect([count(api, REFUSED), count(api, ACCEPTED)]).toEqual([2, 2]);
      expect(count(api, 'could not reload tokens')).toBeGreaterThan(2);
    } finally {
      proxy.setMode('up');
      await api.stop();
      api.cleanup();
      await proxy.close();
      await store.teardown();
    }
  });
});
