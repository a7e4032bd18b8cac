/**
 * The shipped layer: the built service started with the README's own command lines, once per
 * documented configuration, kept up for at least 30 s under light traffic, used through the
 * README's commands (admin, `plants` CLI, example app, /docs), then stopped with a signal.
 * Nothing here imports the api's source: what is tested is what a user runs.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TOKEN } from '../support/http.ts';
import { redisAvailable } from '../support/redis.ts';
import {
  lightTraffic,
  PNPM,
  ROOT,
  readmeShellLines,
  runShipped,
  type ShippedService,
  startShipped,
} from '../support/shipped.ts';
import { postgresAvailable, postgresTestStore, type TestStoreInstance } from '../support/stores.ts';
import { newWebhookSecret, type Receiver, startReceiver } from '../support/webhook-receiver.ts';

/** How long every configuration stays up under traffic before the final checks. */
const UP_FOR_MS = 30_000;
const START = `${PNPM} start`;
const ADMIN = `${PNPM} --filter @plant-store/api admin`;
const PLANTS = 'node packages/client/bin/plants.js';

const withPostgres = postgresAvailable();
const withRedis = withPostgres && redisAvailable();

type Config = { name: string; service: ShippedService; token: string; firstId: bigint };

const dir = mkdtempSync(join(tmpdir(), 'plant-store-shipped-'));
const configs: Config[] = [];
const databases: TestStoreInstance[] = [];
const secret = newWebhookSecret();
let good: Receiver;
let failing: Receiver;
let issuedToken = '';
let traffic: Promise<{ rounds: number; failures: string[] }>;
let upUntil = 0;

function config(name: string): Config {
  const found = configs.find((c) => c.name === name);
  if (found === undefined) throw new Error(`configuration ${name} did not start`);
  return found;
}

beforeAll(async () => {
  good = await startReceiver(secret);
  failing = await startReceiver(secret, { answer: () => 500 });
  const sqlite = (name: string) => `file:${join(dir, name, 'plants.db')}`;
  // Started one after another: each `pnpm start` first runs (or finds cached) the build.
  const start = async (name: string, env: Record<string, string>, token: string, firstId: bigint) => {
    const service = await startShipped(START, { env: { PORT: '0', ...env } });
    configs.push({ name, service, token, firstId });
  };

  await start(
    'webhooks',
    {
      DATABASE_URL: sqlite('webhooks'),
      API_TOKENS: TOKEN,
      WEBHOOK_URLS: `${good.url}/plants-hook,${failing.url}/plants-hook`,
      WEBHOOK_SECRET: secret,
      WEBHOOK_MAX_ATTEMPTS: '1',
    },
    TOKEN,
    1_000_000n,
  );
  await start(
    'cors',
    { DATABASE_URL: sqlite('cors'), API_TOKENS: TOKEN, CORS_ORIGINS: 'https://app.example' },
    TOKEN,
    2_000_000n,
  );
  if (withPostgres) {
    const db = await postgresTestStore.setup();
    databases.push(db);
    await start('postgres', { DATABASE_URL: db.env.DATABASE_URL!, API_TOKENS: TOKEN }, TOKEN, 3_000_000n);
  }
  if (withRedis) {
    // Several instances as the README runs them: migrate once, issue a token, start two instances
    // sharing PostgreSQL and Redis, with no API_TOKENS (issued tokens only).
    const db = await postgresTestStore.setup();
    databases.push(db);
    const migrated = await runShipped(`${PNPM} --filter @plant-store/api migrate`, {
      env: { DATABASE_URL: db.env.DATABASE_URL! },
    });
    expect(migrated.code, migrated.stderr).toBe(0);
    expect(migrated.stdout).toMatch(/\{"migrated":true,"applied":\[1(,\d+)*\]\}/);
    const name = `shipped-${process.pid}-${Date.now()}`;
    const created = await runShipped(`${ADMIN} token create --name ${name}`, {
      env: { DATABASE_URL: db.env.DATABASE_URL! },
    });
    expect(created.code, created.stderr).toBe(0);
    issuedToken = created.stdout.trim().split('\n').at(-1)!;
    expect(issuedToken).toMatch(/^pst_[A-Za-z0-9_-]{43}$/);
    // A window longer than the test, so no reset comes between the shared-limit test's requests.
    const env = {
      DATABASE_URL: db.env.DATABASE_URL!,
      REDIS_URL: 'redis://127.0.0.1:6379',
      HOST: '127.0.0.1',
      RATE_LIMIT_WINDOW_SECONDS: '3600',
    };
    await start('postgres+redis a', env, issuedToken, 4_000_000n);
    await start('postgres+redis b', env, issuedToken, 5_000_000n);
  }
  upUntil = Date.now() + UP_FOR_MS;
  traffic = lightTraffic(
    configs.map(({ service, token }) => ({ url: service.url, token })),
    { until: upUntil, firstId: 10_000_000n },
  );
}, 600_000);

afterAll(async () => {
  for (const { service } of configs) if (service.alive()) await service.stop('SIGTERM').catch(() => {});
  await good?.close();
  await failing?.close();
  for (const db of databases) await db.teardown();
  rmSync(dir, { recursive: true, force: true });
});

// Each step runs real commands (npx, pnpm, turbo) on a 2-core machine: generous bounds, not the suite's 30 s.
describe('the built service, started with `pnpm start` as the README says', { timeout: 180_000 }, () => {
  it('serves the API reference and the OpenAPI document from the bundle in every configuration', async () => {
    for (const { service } of configs) {
      const document = await fetch(`${service.url}/openapi.json`);
      expect(document.status).toBe(200);
      const json = (await document.json()) as { openapi: string; info: { version: string } };
      expect([json.openapi, json.info.version]).toEqual(['3.1.0', '1.0.0']);
      const page = await fetch(`${service.url}/docs`);
      expect(page.status).toBe(200);
      expect(await page.text()).toContain('<script src="docs/swagger-ui-bundle.js"></script>');
      for (const asset of ['swagger-ui-bundle.js', 'swagger-ui.css', 'init.js']) {
        const answer = await fetch(`${service.url}/docs/${asset}`);
        expect(answer.status, asset).toBe(200);
        expect((await answer.arrayBuffer()).byteLength, asset).toBeGreaterThan(100);
      }
    }
  });

  it('serves the plant console under /app/ from the build in every configuration', async () => {
    for (const { service } of configs) {
      const page = await fetch(`${service.url}/app/`);
      expect(page.status).toBe(200);
      expect(page.headers.get('content-security-policy')).toContain("connect-src 'self'");
      const html = await page.text();
      const assets = [...html.matchAll(/(?:src|href)="\.\/(assets\/[^"]+)"/g)].map((match) => match[1]!);
      expect(assets.some((asset) => asset.endsWith('.js'))).toBe(true);
      for (const asset of assets) {
        const answer = await fetch(`${service.url}/app/${asset}`);
        expect(answer.status, asset).toBe(200);
        expect(answer.headers.get('cache-control'), asset).toBe('public, max-age=31536000, immutable');
      }
    }
  });

  it('CORS_ORIGINS: answers a preflight from the configured origin only', async () => {
    const { service } = config('cors');
    const preflight = (origin: string) =>
      fetch(`${service.url}/plants`, {
        method: 'OPTIONS',
        headers: { origin, 'access-control-request-method': 'POST' },
      });
    const allowed = await preflight('https://app.example');
    expect(allowed.status).toBe(204);
    expect(allowed.headers.get('access-control-allow-origin')).toBe('https://app.example');
    const refused = await preflight('https://evil.example');
    expect(refused.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('WEBHOOK_URLS + WEBHOOK_SECRET: signed deliveries arrive; `webhooks failed` lists the failing subscriber', async () => {
    const { service } = config('webhooks');
    const answer = await fetch(`${service.url}/plants`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: '{"id":9007199254740993,"name":"Monstera","tag":"aroid"}',
    });
    expect(answer.status).toBe(200);
    const body = '{"id":9007199254740993,"name":"Monstera","tag":"aroid"}';
    await good.waitFor((received) => received.some((r) => r.body === body), 15_000);
    expect(good.received.find((r) => r.body === body)?.verified).toBe(true);
    await failing.waitFor((received) => received.some((r) => r.body === body), 15_000);
    // The failing subscriber's delivery is given up after its one attempt, then listed.
    let listed = '';
    for (let i = 0; i < 50 && !listed.includes('9007199254740993'); i++) {
      const run = await runShipped('node dist/main.js webhooks failed --limit 100', {
        cwd: join(ROOT, 'apps/api'),
        env: { DATABASE_URL: `file:${join(dir, 'webhooks', 'plants.db')}` },
      });
      expect(run.code, run.stderr).toBe(0);
      listed = run.stdout;
      if (!listed.includes('9007199254740993')) await sleep(200);
    }
    const lines = listed.trim().split('\n');
    const monstera = lines.find((line) => line.includes('9007199254740993'))!;
    // By its origin only: a subscriber's path can hold a secret (Slack keeps one there).
    expect(monstera).toContain(`"url":"${new URL(failing.url).origin}"`);
    expect(monstera).not.toContain('/plants-hook');
    expect(monstera).toContain('"lastError":"HTTP 500"');
    expect(lines.every((line) => !line.includes(good.url))).toBe(true);
  });

  it.runIf(withPostgres)(
    'the `plants` CLI creates, reads, lists and deletes on the PostgreSQL configuration',
    async () => {
      const { service } = config('postgres');
      const env = { PLANTS_URL: service.url, PLANTS_TOKEN: TOKEN };
      const created = await runShipped(`${PLANTS} create --id 9007199254740993 --name Monstera --tag aroid`, {
        env,
      });
      expect(created).toMatchObject({ code: 0 });
      expect(created.stdout).toMatch(/9007199254740993\s+Monstera\s+aroid/);
      const got = await runShipped(`${PLANTS} get 9007199254740993 --json`, { env });
      expect(got).toMatchObject({ code: 0, stderr: '' });
      expect(got.stdout).toMatch(
        /^\{"id":9007199254740993,"name":"Monstera","tag":"aroid","version":[1-9][0-9]*\}\n$/,
      );
      const listed = await runShipped(`${PLANTS} list --limit 2 --json`, { env });
      expect(listed.code).toBe(0);
      expect(listed.stdout).toMatch(/^\{"plants":\[\{"id":/);
      const deleted = await runShipped(`${PLANTS} delete 9007199254740993`, { env });
      expect(deleted).toMatchObject({ code: 0, stdout: 'Deleted plant 9007199254740993.\n' });
      const gone = await runShipped(`${PLANTS} get 9007199254740993 --json`, { env });
      expect(gone.code).toBe(1);
      expect(gone.stderr).toBe('{"error":404,"message":"There is no plant with id 9007199254740993."}\n');
    },
  );

  it('the example app runs with its own documented command', async () => {
    const { service } = config('cors');
    const command = readmeShellLines().find((line) => line.includes('@plant-store/example-trpc-app'));
    expect(command).toBe(`${PNPM} --filter @plant-store/example-trpc-app start`);
    const run = await runShipped(command!, { env: { PLANTS_URL: service.url, PLANTS_TOKEN: TOKEN } });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('created 1001 Monstera\n');
    expect(run.stdout).toContain('created 1002 Boston fern\n');
    expect(run.stdout).toContain('created 9007199254740993 Bird of paradise\n');
    expect(run.stdout).toMatch(/the store holds \d+ plants; 9007199254740993 is Bird of paradise\n/);
  });

  it('--help and -h print the usage and exit 0; an unknown command exits 2', async () => {
    for (const flag of ['--help', '-h']) {
      const admin = await runShipped(`${ADMIN} ${flag}`);
      expect(admin.code, admin.stderr).toBe(0);
      expect(admin.stdout).toContain('Usage: main.js [command]');
      expect(admin.stdout).toContain('token create --name NAME');
      const cli = await runShipped(`${PLANTS} ${flag}`);
      expect(cli.code).toBe(0);
      expect(cli.stdout).toContain('Usage: plants <command> [options]');
    }
    const admin = await runShipped('node dist/main.js frobnicate', { cwd: join(ROOT, 'apps/api') });
    expect(admin.code).toBe(2);
    expect(admin.stderr).toContain('Unknown command "frobnicate"');
    expect((await runShipped(`${PLANTS} frobnicate`)).code).toBe(2);
  });

  it.runIf(withRedis)('PostgreSQL + REDIS_URL: two instances share one rate limit', async () => {
    const a = config('postgres+redis a').service;
    const b = config('postgres+redis b').service;
    const remaining: number[] = [];
    for (const service of [a, b, a, b, a, b]) {
      const answer = await fetch(`${service.url}/plants?limit=1`, {
        headers: { authorization: `Bearer ${issuedToken}` },
      });
      expect(answer.status).toBe(200);
      await answer.text();
      remaining.push(Number(/;r=(\d+);/.exec(answer.headers.get('ratelimit') ?? '')?.[1]));
    }
    // One counter for both: each request, on either instance, takes one point from it.
    for (let i = 1; i < remaining.length; i++) expect(remaining[i]).toBeLessThan(remaining[i - 1]!);
  });

  it(`keeps answering every configuration for ${UP_FOR_MS / 1000} s under light traffic, then stops cleanly on a signal`, async () => {
    const { rounds, failures } = await traffic;
    expect(Date.now()).toBeGreaterThanOrEqual(upUntil);
    expect(failures).toEqual([]);
    expect(rounds).toBeGreaterThanOrEqual(UP_FOR_MS / 2_000);
    for (const { name, service, token } of configs) {
      expect(service.alive(), name).toBe(true);
      const answer = await fetch(`${service.url}/plants?limit=1`, {
        headers: { authorization: `Bearer ${token}` },
      });
      expect(answer.status, name).toBe(200);
      await answer.text();
    }
    // A terminal's Ctrl-C reaches the whole foreground group as SIGINT; a supervisor sends SIGTERM.
    for (const [i, { name, service }] of configs.entries()) {
      await service.stop(i % 2 === 0 ? 'SIGTERM' : 'SIGINT');
      expect(
        service.logs.some((entry) => entry.msg === 'stopped'),
        `${name}: ${service.commandLine}\n${service.output.join('\n')}`,
      ).toBe(true);
    }
  });
});
