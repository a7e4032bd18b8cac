/**
 * Issue 40, row 3: every admin command of the built api (`node dist/main.js …`) treats a repeated
 * option by one rule (docs/operations.md): an option that names what to act on (`token revoke
 * --name`, `webhooks disable|enable|delete --id`) or a list (`--scope`) takes several values, and
 * each is acted on and reported; any other option given twice is refused with exit 2 and the usage,
 * and nothing is done. node:util alone keeps the last value and exits 0.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runApiCommand } from '../support/api-process.ts';
import { send, TOKEN } from '../support/http.ts';
import { type RunningApi, startInProcess } from '../support/in-process.ts';
import { type TestStoreInstance, testStores } from '../support/stores.ts';

type Outcome = { code: number; stdout: string; stderr: string };

const USAGE_LINE = 'Usage: main.js [command]';

describe.each(testStores())('repeated options of the admin commands on $name', (testStore) => {
  let store: TestStoreInstance;
  let api: RunningApi;

  /** A command of the built api against the test's store, with its exit code. */
  const admin = (...args: string[]): Promise<Outcome> =>
    runApiCommand(args, store.env).then(
      ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
      (error: Outcome) => ({ code: error.code, stdout: error.stdout, stderr: error.stderr }),
    );

  /** Each issued token's name and whether it is revoked, straight from the database. */
  const tokens = async () =>
    Object.fromEntries(
      (await store.rows('SELECT name, revoked_at FROM api_tokens ORDER BY name')).map((row) => [
        row.name,
        row.revoked_at === null ? 'active' : 'revoked',
      ]),
    );

  /** Each endpoint's id and whether it is disabled, straight from the database. */
  const endpoints = async () =>
    Object.fromEntries(
      (await store.rows('SELECT id, disabled_at FROM webhook_endpoints ORDER BY id')).map((row) => [
        row.id,
        row.disabled_at === null ? 'enabled' : 'disabled',
      ]),
    );

  const register = async (): Promise<string> => {
    const answer = await send(`${api.url}/webhook-endpoints`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: 'http://127.0.0.1:9/hook' }),
    });
    expect(answer.status).toBe(201);
    return (answer.json as { id: string }).id;
  };

  beforeAll(async () => {
    store = await testStore.setup();
    api = await startInProcess({
      env: {
        ...store.env,
        WEBHOOK_ALLOW_PRIVATE_URLS: '1',
        WEBHOOK_SECRETS_KEY: randomBytes(32).toString('base64'),
        // Nothing is delivered while the test runs: only the admin commands change endpoints.
        WEBHOOK_POLL_INTERVAL_MS: '600000',
      },
    });
  });
  afterAll(async () => {
    await api?.stop();
    api?.cleanup();
    await store?.teardown();
  });

  it('revokes every token named by a repeated --name, one line each, exit 1 when one is not active', async () => {
    for (const name of ['leaked-a', 'leaked-b', 'leaked-c', 'kept']) {
      expect((await admin('token', 'create', '--name', name, '--scope', 'read')).code).toBe(0);
    }
    const line = (name: string) =>
      `Token "${name}" revoked, and its 0 webhook endpoints disabled; running instances stop accepting it, and end its event streams, within TOKEN_REFRESH_MS.\n`;

    expect(await admin('token', 'revoke', '--name', 'leaked-a', '--name', 'leaked-b')).toStrictEqual({
      code: 0,
      stdout: '',
      stderr: line('leaked-a') + line('leaked-b'),
    });
    expect(await tokens()).toStrictEqual({
      kept: 'active',
      'leaked-a': 'revoked',
      'leaked-b': 'revoked',
      'leaked-c': 'active',
    });

    // One not active does not stop the others; the same name twice is revoked once.
    expect(
      await admin('token', 'revoke', '--name', 'leaked-a', '--name', 'leaked-c', '--name=leaked-c'),
    ).toStrictEqual({
      code: 1,
      stdout: '',
      stderr: `No active token named "leaked-a".\n${line('leaked-c')}`,
    });
    expect(await tokens()).toStrictEqual({
      kept: 'active',
      'leaked-a': 'revoked',
      'leaked-b': 'revoked',
      'leaked-c': 'revoked',
    });
  });

  it('disables, enables and deletes every endpoint named by a repeated --id, one line each', async () => {
    const [a, b, c] = [await register(), await register(), await register()];
    const run = (command: string, ...ids: string[]) =>
      admin('webhooks', command, ...ids.flatMap((id) => ['--id', id]));

    expect(await run('disable', a, b)).toStrictEqual({
      code: 0,
      stdout: '',
      stderr:
        `Webhook endpoint ${a} disabled: nothing more is sent to it, and its pending deliveries failed.\n` +
        `Webhook endpoint ${b} disabled: nothing more is sent to it, and its pending deliveries failed.\n`,
    });
    expect(await endpoints()).toStrictEqual({ [a]: 'disabled', [b]: 'disabled', [c]: 'enabled' });

    const missing = `we_${'0'.repeat(24)}`;
    expect(await run('enable', a, missing, b)).toMatchObject({
      code: 1,
      stdout: '',
      stderr: expect.stringMatching(
        new RegExp(
          `^Webhook endpoint ${a} enabled: .*\nNo webhook endpoint with id "${missing}".\nWebhook endpoint ${b} enabled: .*\n$`,
        ),
      ),
    });
    expect(await endpoints()).toStrictEqual({ [a]: 'enabled', [b]: 'enabled', [c]: 'enabled' });

    expect(await run('delete', a, c)).toStrictEqual({
      code: 0,
      stdout: '',
      stderr: `Webhook endpoint ${a} deleted, with its deliveries.\nWebhook endpoint ${c} deleted, with its deliveries.\n`,
    });
    expect(await endpoints()).toStrictEqual({ [b]: 'enabled' });

    // A bad id among good ones is wrong usage: nothing is done.
    const refused = await run('disable', b, 'we_1');
    expect([refused.code, refused.stderr.split('\n')[0]]).toStrictEqual([
      2,
      '--id must be a webhook endpoint id (we_ and 24 hex digits): "we_1"',
    ]);
    expect(await endpoints()).toStrictEqual({ [b]: 'enabled' });
  });

  it.each([
    [['migrate', '--to', '0', '--to', '1'], '--to'],
    [['token', 'create', '--name', 'one', '--name', 'two'], '--name'],
    [['token', 'create', '--name=one', '--scope', 'read', '--name=two'], '--name'],
    [['webhooks', 'failed', '--limit', '1', '--limit', '2'], '--limit'],
    [['webhooks', 'endpoints', '--owner', 'a', '--owner', 'b'], '--owner'],
  ])('refuses %j with exit 2 and the usage, and does nothing', async (args, option) => {
    const before = {
      tokens: await tokens(),
      endpoints: await endpoints(),
      schema: await store.rows('SELECT version FROM schema_migrations ORDER BY version'),
    };
    const outcome = await admin(...args);
    expect(outcome.code).toBe(2);
    expect(outcome.stdout).toBe('');
    expect(outcome.stderr.split('\n')[0]).toBe(`${option} takes one value: give it once`);
    expect(outcome.stderr).toContain(USAGE_LINE);
    expect({
      tokens: await tokens(),
      endpoints: await endpoints(),
      schema: await store.rows('SELECT version FROM schema_migrations ORDER BY version'),
    }).toStrictEqual(before);
  });

  it('refuses an operand or an option of another command, and a missing --name or --id', async () => {
    for (const [args, message] of [
      [['token', 'list', 'extra'], "Unexpected argument 'extra'"],
      [['token', 'list', '--name', 'x'], "Unknown option '--name'"],
      [['token', 'revoke'], '--name is required'],
      [['webhooks', 'delete'], '--id is required'],
    ] as const) {
      const outcome = await admin(...args);
      expect([args, outcome.code, outcome.stderr.split('\n')[0]]).toStrictEqual([
        args,
        2,
        expect.stringContaining(message),
      ]);
      expect(outcome.stderr).toContain(USAGE_LINE);
    }
  });

  it('documents the rule in --help', async () => {
    const { stdout } = await admin('--help');
    expect(stdout).toContain('token revoke --name NAME...');
    expect(stdout).toContain('webhooks disable --id ID...');
    expect(stdout).toContain('principal block --issuer URL --subject SUB...');
    expect(stdout).toContain(
      "Options that name what to act on (revoke's --name, --id, block's --subject) or a list (--scope) may be repeated:\n" +
        'every value is acted on in turn, each reported on its own line, and the exit status is 1 if any\n' +
        'failed. Any other option given twice is refused (exit 2), and so is a bad value: nothing is done.',
    );
  });
});
