import { join } from 'node:path';
import { apiProcessPerFile, runApiCommand } from '@plant-store/api/testing';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRestClient, type WebhookDelivery } from '../../src/index.ts';
import { closedPort } from '../support/clients.ts';
import { runPlants } from '../support/plants-cli.ts';
import { type Receiver, startReceiver } from '../support/receiver.ts';

const TOKEN = 'cli-endpoints-token-0123456789';
const OTHER = 'cli-endpoints-other-0123456789';
const ENDPOINT_ID = /^we_[0-9a-f]{24}$/;
const DELIVERY_ID = /^msg_[0-9a-f]{32}$/;
const HEADER =
  'ID                                    EVENT          STATUS     ATTEMPTS  LAST CODE  NEXT ATTEMPT';

// Loopback receivers need WEBHOOK_ALLOW_PRIVATE_URLS; short poll and token refresh intervals keep the
// test quick.
const api = apiProcessPerFile({
  token: `${TOKEN},${OTHER}`,
  env: { WEBHOOK_ALLOW_PRIVATE_URLS: '1', WEBHOOK_POLL_INTERVAL_MS: '100', TOKEN_REFRESH_MS: '200' },
});

let receiver: Receiver;
beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver?.close();
});

/** Runs the `plants` bin with PLANTS_URL/PLANTS_TOKEN set unless overridden. */
function plants(args: string[], env: Record<string, string | undefined> = {}) {
  return runPlants(args, { PLANTS_URL: api.url, PLANTS_TOKEN: TOKEN, ...env });
}

/** Request lines the api logged: proves a usage error sent nothing. */
function requestsLogged(): number {
  return api.logs.filter((line) => line.includes('"msg":"request"')).length;
}

/** `plants endpoints add` as a script reads it: the id and the secret, from the human output. */
async function addEndpoint(url: string, env: Record<string, string> = {}) {
  const run = await plants(['endpoints', 'add', url], env);
  expect(run).toMatchObject({ code: 0, stderr: '' });
  const [, id, secret] = /^Added webhook endpoint (\S+) for .*\nSigning secret: (\S+)\n/.exec(run.stdout)!;
  return { id: id!, secret: secret! };
}

/** The delivery, once the worker has recorded its outcome (it is no longer pending). */
async function settled(id: string, deliveryId: string): Promise<WebhookDelivery> {
  const client = createRestClient({ baseUrl: api.url, token: TOKEN });
  const deadline = Date.now() + 20_000;
  for (;;) {
    const { deliveries } = await client.endpoints.deliveries(id, { limit: 100 });
    const found = deliveries.find((delivery) => delivery.id === deliveryId);
    if (found !== undefined && found.status !== 'pending') return found;
    if (Date.now() > deadline) throw new Error(`delivery ${deliveryId} is still ${found?.status} after 20 s`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** A delivery as `deliveries` and `ping` print its row. */
function row(delivery: WebhookDelivery): string {
  const { id, event, status, attempts, lastResponseCode, nextAttemptAt } = delivery;
  return [
    id.padEnd(36),
    event.padEnd(13),
    status.padEnd(9),
    String(attempts).padStart(8),
    String(lastResponseCode ?? '-').padStart(9),
    nextAttemptAt ?? '-',
  ].join('  ');
}

describe('plants endpoints: the whole life of an endpoint', () => {
  it('add → ping (verified with the printed secret) → deliveries → redeliver → rotate → rm → list', async () => {
    // add: the id and the secret, printed once, with a note to keep it.
    const url = `${receiver.url}/hooks/cli`;
    const added = await plants(['endpoints', 'add', url, '--description', 'CLI test']);
    expect(added.code).toBe(0);
    expect(added.stderr).toBe('');
    const [, id, secret] = /^Added webhook endpoint (\S+) for (?:\S+)\.\nSigning secret: (\S+)\n/.exec(
      added.stdout,
    )!;
    expect(id).toMatch(ENDPOINT_ID);
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    expect(added.stdout).toBe(
      `Added webhook endpoint ${id} for ${url}.\nSigning secret: ${secret}\n` +
        'Keep the secret now: it is not shown again. Receivers verify deliveries with it (Standard Webhooks).\n',
    );

    // list: the endpoint, never its secret.
    const listed = await plants(['endpoints', 'list', '--json']);
    expect(listed).toMatchObject({ code: 0, stderr: '' });
    const [endpoint] = JSON.parse(listed.stdout);
    expect(JSON.parse(listed.stdout)).toStrictEqual([
      {
        id,
        url,
        description: 'CLI test',
        createdAt: expect.any(String),
        events: ['plant.created'],
        disabled: null,
      },
    ]);
    expect(listed.stdout).not.toContain(secret);
    const created = endpoint.createdAt as string;
    const width = Math.max(2, id!.length);
    expect(await plants(['endpoints', 'list'])).toEqual({
      code: 0,
      stdout:
        `${'ID'.padEnd(width)}  ${'URL'.padEnd(url.length)}  EVENTS         STATUS  ${'CREATED'.padEnd(created.length)}  DESCRIPTION\n` +
        `${id}  ${url}  plant.created  active  ${created}  CLI test\n`,
      stderr: '',
    });

    // ping: a pending webhook.ping delivery, which the receiver gets, signed with the printed secret.
    const pinged = await plants(['endpoints', 'ping', id!, '--json']);
    expect(pinged).toMatchObject({ code: 0, stderr: '' });
    const ping = JSON.parse(pinged.stdout) as WebhookDelivery;
    expect(ping).toMatchObject({
      event: 'webhook.ping',
      status: 'pending',
      attempts: 0,
      lastResponseCode: null,
    });
    expect(ping.id).toMatch(DELIVERY_ID);
    const [first] = await receiver.until(1);
    expect(first!.path).toBe('/hooks/cli');
    expect(first!.headers['webhook-id']).toBe(ping.id);
    expect(first!.headers['webhook-event']).toBe('webhook.ping');
    expect(new Webhook(secret!).verify(first!.body, first!.headers)).toStrictEqual({
      type: 'webhook.ping',
      endpointId: id,
      timestamp: expect.any(String),
    });

    // deliveries: delivered at the first attempt, with the receiver's 200.
    const delivered = await settled(id!, ping.id);
    expect(delivered).toStrictEqual({
      ...ping,
      status: 'delivered',
      attempts: 1,
      lastResponseCode: 200,
      lastError: null,
      nextAttemptAt: null,
    });
    expect(await plants(['endpoints', 'deliveries', id!])).toEqual({
      code: 0,
      stdout: `${HEADER}\n${row(delivered)}\n`,
      stderr: '',
    });
    expect(await plants(['endpoints', 'deliveries', id!, '--json'])).toEqual({
      code: 0,
      stdout: `${JSON.stringify(delivered)}\n`,
      stderr: '',
    });

    // redeliver: the same delivery again, same webhook-id, still verifying.
    const redelivered = await plants(['endpoints', 'redeliver', id!, ping.id, '--json']);
    expect(redelivered).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(redelivered.stdout)).toMatchObject({
      id: ping.id,
      event: 'webhook.ping',
      status: 'pending',
    });
    const [, second] = await receiver.until(2);
    expect(second!.headers['webhook-id']).toBe(ping.id);
    expect(new Webhook(secret!).verify(second!.body, second!.headers)).toMatchObject({ endpointId: id });
    expect(await settled(id!, ping.id)).toMatchObject({ status: 'delivered', lastResponseCode: 200 });

    // rotate: a new secret, and until when the old one still signs; both verify meanwhile.
    const rotated = await plants(['endpoints', 'rotate', id!]);
    expect(rotated).toMatchObject({ code: 0, stderr: '' });
    const [, newSecret, until] =
      /^New signing secret for \S+: (\S+)\nThe previous secret keeps signing alongside it until (\S+)\.\nKeep the new secret now: it is not shown again\.\n$/.exec(
        rotated.stdout,
      )!;
    expect(newSecret).not.toBe(secret);
    expect(Date.parse(until!)).toBeGreaterThan(Date.now());
    const table = await plants(['endpoints', 'ping', id!]);
    expect(table).toMatchObject({ code: 0, stderr: '' });
    expect(table.stdout).toMatch(new RegExp(`^${HEADER}\\nmsg_[0-9a-f]{32}  webhook\\.ping +pending +0 +- `));
    const [, , third] = await receiver.until(3);
    expect(new Webhook(newSecret!).verify(third!.body, third!.headers)).toMatchObject({ endpointId: id });
    expect(new Webhook(secret!).verify(third!.body, third!.headers)).toMatchObject({ endpointId: id });

    // rm, then the list is empty, and the id is gone.
    expect(await plants(['endpoints', 'rm', id!])).toEqual({
      code: 0,
      stdout: `Deleted webhook endpoint ${id}.\n`,
      stderr: '',
    });
    expect(await plants(['endpoints', 'list'])).toEqual({
      code: 0,
      stdout: 'No webhook endpoints.\n',
      stderr: '',
    });
    expect(await plants(['endpoints', 'list', '--json'])).toEqual({ code: 0, stdout: '[]\n', stderr: '' });
    const again = await plants(['endpoints', 'rm', id!, '--json']);
    expect(again.code).toBe(1);
    expect(again.stdout).toBe('');
    expect(JSON.parse(again.stderr)).toStrictEqual({
      error: 404,
      message: `There is no webhook endpoint with id ${id}.`,
    });
  });

  it('pages deliveries: --limit shows one page and says how to read on; --all shows every page', async () => {
    const { id } = await addEndpoint(`${receiver.url}/hooks/paging`);
    const pings: WebhookDelivery[] = [];
    for (let n = 0; n < 3; n++) {
      pings.push(JSON.parse((await plants(['endpoints', 'ping', id, '--json'])).stdout));
    }
    const newestFirst = pings.map((ping) => ping.id).reverse();
    const ids = (stdout: string) =>
      stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line).id);

    const page = await plants(['endpoints', 'deliveries', id, '--limit', '2', '--json']);
    expect(page.code).toBe(0);
    expect(ids(page.stdout)).toStrictEqual(newestFirst.slice(0, 2));
    expect(page.stderr).toBe(
      `More deliveries follow: plants endpoints deliveries ${id} --before ${newestFirst[1]} (or --all)\n`,
    );
    const rest = await plants([
      'endpoints',
      'deliveries',
      id,
      '--limit',
      '2',
      '--before',
      newestFirst[1]!,
      '--json',
    ]);
    expect(rest).toMatchObject({ code: 0, stderr: '' });
    expect(ids(rest.stdout)).toStrictEqual(newestFirst.slice(2));

    const all = await plants(['endpoints', 'deliveries', id, '--all', '--limit', '1']);
    expect(all).toMatchObject({ code: 0, stderr: '' });
    const lines = all.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe(HEADER);
    expect(lines.slice(1).map((line) => line.slice(0, 36).trimEnd())).toStrictEqual(newestFirst);
    await plants(['endpoints', 'rm', id]);
  });
});

describe('plants endpoints list: a disabled endpoint', () => {
  it('shows it disabled, with the reason, once an operator disabled it', async () => {
    const { id } = await addEndpoint(`${receiver.url}/disabled`);
    // runApiCommand rejects when the command exits non-zero.
    await runApiCommand(['webhooks', 'disable', '--id', id], {
      DATABASE_URL: `file:${join(api.dataDir, 'plants.db')}`,
    });
    try {
      const listed = await plants(['endpoints', 'list']);
      expect(listed).toMatchObject({ code: 0, stderr: '' });
      const line = listed.stdout.split('\n').find((row) => row.startsWith(id));
      expect(line).toMatch(new RegExp(`^${id}  \\S+  plant.created  disabled \\(operator\\)  `));
    } finally {
      await plants(['endpoints', 'rm', id]);
    }
  });
});

describe('plants endpoints: errors and exit statuses', () => {
  it("answers 404 (exit 1) for another token's endpoint, which that token does not list", async () => {
    const { id } = await addEndpoint(`${receiver.url}/hooks/mine`);
    const other = { PLANTS_TOKEN: OTHER };
    expect(await plants(['endpoints', 'list'], other)).toEqual({
      code: 0,
      stdout: 'No webhook endpoints.\n',
      stderr: '',
    });
    const deliveryId = `msg_${'0'.repeat(32)}`;
    const refused = [
      ['rm', id],
      ['rotate', id],
      ['ping', id],
      ['deliveries', id],
      ['redeliver', id, deliveryId],
    ];
    for (const args of refused) {
      expect(await plants(['endpoints', ...args], other), args.join(' ')).toEqual({
        code: 1,
        stdout: '',
        stderr: `plants: 404 There is no webhook endpoint with id ${id}.\n`,
      });
    }
    // Still there for its owner.
    expect(JSON.parse((await plants(['endpoints', 'list', '--json'])).stdout)).toContainEqual(
      expect.objectContaining({ id }),
    );
    await plants(['endpoints', 'rm', id]);
  });

  it('answers 403 (exit 1) to a token without the webhooks scope (issued ones lack it by default)', async () => {
    const issued = await runApiCommand(['token', 'create', '--name', 'no-webhooks'], {
      DATABASE_URL: `file:${join(api.dataDir, 'plants.db')}`,
    });
    const token = issued.stdout.trim().split('\n').at(-1)!;
    // The api learns of issued tokens every TOKEN_REFRESH_MS: 401 until then.
    let run = await plants(['endpoints', 'list'], { PLANTS_TOKEN: token });
    for (let tries = 0; run.stderr.startsWith('plants: 401') && tries < 50; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      run = await plants(['endpoints', 'list'], { PLANTS_TOKEN: token });
    }
    expect(run).toEqual({
      code: 1,
      stdout: '',
      stderr: 'plants: 403 This token lacks the webhooks scope this operation needs.\n',
    });
    // The same token still reads plants.
    expect(await plants(['list'], { PLANTS_TOKEN: token })).toMatchObject({
      code: 0,
      stdout: 'No plants.\n',
    });
  });

  it("prints the server's 400 for a URL it refuses (exit 1)", async () => {
    expect(await plants(['endpoints', 'add', 'not a url', '--json'])).toEqual({
      code: 1,
      stdout: '',
      stderr: '{"error":400,"message":"url must be an absolute URL"}\n',
    });
    expect(await plants(['endpoints', 'add', 'ftp://127.0.0.1/hook'])).toEqual({
      code: 1,
      stdout: '',
      stderr: 'plants: 400 url must be an https:// or http:// URL\n',
    });
    expect(await plants(['endpoints', 'list', '--json'])).toEqual({ code: 0, stdout: '[]\n', stderr: '' });
  });

  it('refuses a wrong command line with exit 2 and sends nothing', async () => {
    const before = requestsLogged();
    const id = 'we_0123456789abcdef01234567';
    const cases: [string[], string][] = [
      [
        ['endpoints'],
        'endpoints needs a subcommand (add, list, update, rm, rotate, deliveries, redeliver, ping).',
      ],
      [
        ['endpoints', 'remove', id],
        'unknown endpoints subcommand "remove" (add, list, update, rm, rotate, deliveries, redeliver, ping).',
      ],
      [['endpoints', 'add'], 'endpoints add needs one URL.'],
      [['endpoints', 'rm'], 'endpoints rm needs one endpoint id.'],
      [['endpoints', 'list', 'x'], 'endpoints list takes no operand ("x").'],
      [['endpoints', 'list', '--description', 'x'], 'endpoints list takes no --description.'],
      [['endpoints', 'rm', 'we_1'], 'the endpoint id must be we_ and 24 hex digits ("we_1").'],
      [['endpoints', 'redeliver', id], 'endpoints redeliver needs an endpoint id and a delivery id.'],
      [
        ['endpoints', 'redeliver', id, 'msg_1'],
        'the delivery id must be a delivery id, msg_ and 32 hex digits ("msg_1").',
      ],
      [
        ['endpoints', 'deliveries', id, '--limit', '101'],
        '--limit must be an integer from 1 to 100 ("101").',
      ],
      [
        ['endpoints', 'deliveries', id, '--before', 'x'],
        '--before must be a delivery id, msg_ and 32 hex digits ("x").',
      ],
      [
        ['endpoints', 'add', 'https://example.com', '--description', 'x'.repeat(257)],
        '--description must be at most 256 characters.',
      ],
    ];
    for (const [args, message] of cases) {
      expect(await plants(args), args.join(' ')).toEqual({
        code: 2,
        stdout: '',
        stderr: `plants: ${message}\nRun "plants --help" for usage.\n`,
      });
    }
    expect(requestsLogged()).toBe(before);
  });

  it('exits 3 when the server does not answer', async () => {
    const run = await plants(['endpoints', 'list'], { PLANTS_URL: `http://127.0.0.1:${await closedPort()}` });
    expect(run.code).toBe(3);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(
      /^plants: \[GET\] http:\/\/127\.0\.0\.1:\d+\/webhook-endpoints: no response \(.*ECONNREFUSED/,
    );
  });
});
