/**
 * Issue 40, row 3, for the `plants` CLI: options that take a list (`--type`, `--events`) may be
 * repeated; any other option given twice is wrong usage (exit 2, nothing sent), where node:util
 * alone would act on the last value.
 */
import { apiProcessPerFile } from '@plant-store/api/testing';
import { describe, expect, it } from 'vitest';
import { runPlants } from '../support/plants-cli.ts';

const TOKEN = 'repeated-options-token-0123456789';
const USAGE = '\nRun "plants --help" for usage.\n';
const ENDPOINT = `we_${'0'.repeat(24)}`;

const api = apiProcessPerFile({ token: TOKEN, env: { WEBHOOK_ALLOW_PRIVATE_URLS: '1' } });

function plants(args: string[]) {
  return runPlants(args, { PLANTS_URL: api.url, PLANTS_TOKEN: TOKEN });
}

/** Request lines the api logged: proves a usage error sent nothing. */
function requestsLogged(): number {
  return api.logs.filter((line) => line.includes('"msg":"request"')).length;
}

describe('plants: a repeated option', () => {
  it.each([
    [['create', '--id', '1', '--id', '2', '--name', 'Fern'], 'id'],
    [['create', '--id', '1', '--name', 'Fern', '--name=Moss'], 'name'],
    [['list', '--limit', '1', '--limit', '2'], 'limit'],
    [['list', '--tag', 'a', '--tag', 'b'], 'tag'],
    [['list', '--all', '--all'], 'all'],
    [['get', '1', '--json', '--json'], 'json'],
    [['get', '1', '--url', 'http://127.0.0.1:9', '--url', 'http://127.0.0.1:9'], 'url'],
    [['get', '1', '--token', 'a', '--token', 'b'], 'token'],
    [['update', '1', '--name', 'a', '--name', 'b'], 'name'],
    [['delete', '1', '--if-match', '"1"', '--if-match', '"2"'], 'if-match'],
    [['import', '-', '--format', 'csv', '--format', 'ndjson'], 'format'],
    [['import', '-', '--on-conflict', 'skip', '--on-conflict', 'update'], 'on-conflict'],
    [['export', '--format', 'csv', '--format', 'ndjson'], 'format'],
    [['watch', '--after', '1', '--after', '2'], 'after'],
    [['endpoints', 'add', 'http://127.0.0.1:9/x', '--description', 'a', '--description', 'b'], 'description'],
    [['endpoints', 'deliveries', ENDPOINT, '--limit', '1', '--limit', '2'], 'limit'],
    [['endpoints', 'deliveries', ENDPOINT, '--before', 'msg_a', '--before', 'msg_b'], 'before'],
  ])('plants %j exits 2 without sending anything', async (args, option) => {
    const before = requestsLogged();
    expect(await plants(args)).toEqual({
      code: 2,
      stdout: '',
      stderr: `plants: --${option} takes one value: give it once.${USAGE}`,
    });
    expect(requestsLogged()).toBe(before);
  });

  it('deletes nothing when --if-match is given twice', async () => {
    expect((await plants(['create', '--id', '40', '--name', 'Fern'])).code).toBe(0);
    expect((await plants(['delete', '40', '--if-match', '"9"', '--if-match', '"1"'])).code).toBe(2);
    expect(await plants(['get', '40', '--json'])).toEqual({
      code: 0,
      stdout: '{"id":40,"name":"Fern","version":1}\n',
      stderr: '',
    });
  });

  it('takes every value of a repeated --events, as of a comma list', async () => {
    const added = await plants([
      'endpoints',
      'add',
      'http://127.0.0.1:9/hooks',
      '--events',
      'plant.deleted',
      '--events=plant.created,plant.updated',
      '--json',
    ]);
    expect(added.code).toBe(0);
    const { id, events } = JSON.parse(added.stdout) as { id: string; events: string[] };
    expect(events).toEqual(['plant.created', 'plant.updated', 'plant.deleted']);
    const updated = await plants([
      'endpoints',
      'update',
      id,
      '--events',
      'plant.updated',
      '--events',
      'plant.updated',
      '--json',
    ]);
    expect(JSON.parse(updated.stdout)).toMatchObject({ id, events: ['plant.updated'] });
  });

  it('says so in --help', async () => {
    const { stdout } = await runPlants(['--help'], {});
    expect(stdout).toContain(
      '--type and --events take lists: repeat them, or list the types with commas. Any other option\n' +
        'given twice is wrong usage (exit 2): nothing is sent.\n',
    );
  });
});
