import { type ApiProcess, apiProcessPerFile, startApiProcess } from '@plant-store/api/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closedPort } from '../support/clients.ts';
import { runPlants } from '../support/plants-cli.ts';

const TOKEN = 'cli-test-token-0123456789';

/** Runs the `plants` bin with PLANTS_URL/PLANTS_TOKEN set unless overridden. */
function plants(args: string[], env: Record<string, string | undefined> = {}) {
  return runPlants(args, { PLANTS_URL: api.url, PLANTS_TOKEN: TOKEN, ...env });
}

/** Request lines the api logged: proves a usage error sent nothing. */
function requestsLogged(): number {
  return api.logs.filter((line) => line.includes('"msg":"request"')).length;
}

const api = apiProcessPerFile({ token: TOKEN });

describe('plants create / get / delete', () => {
  it('creates a plant and shows it as a table, or as exact JSON with --json', async () => {
    expect(await plants(['create', '--id', '9007199254740993', '--name', 'Fern', '--tag', 'herb'])).toEqual({
      code: 0,
      stdout: '              ID  NAME  TAG\n9007199254740993  Fern  herb\n',
      stderr: '',
    });
    expect(await plants(['create', '--id', '9007199254740992', '--name', 'Moss', '--json'])).toEqual({
      code: 0,
      stdout: '{"id":9007199254740992,"name":"Moss","version":2}\n',
      stderr: '',
    });
  });

  it('gets a plant by id, keeping 2^53 + 1 and 2^53 apart', async () => {
    expect(await plants(['get', '9007199254740993', '--json'])).toEqual({
      code: 0,
      stdout: '{"id":9007199254740993,"name":"Fern","tag":"herb","version":1}\n',
      stderr: '',
    });
    expect((await plants(['get', '9007199254740992'])).stdout).toBe(
      '              ID  NAME  TAG\n9007199254740992  Moss\n',
    );
  });

  it('handles the smallest and largest int64 ids exactly', async () => {
    expect((await plants(['create', '--id=-9223372036854775808', '--name', 'Min'])).code).toBe(0);
    expect((await plants(['create', '--id', '9223372036854775807', '--name', 'Max'])).code).toBe(0);
    expect((await plants(['get', '--json', '--', '-9223372036854775808'])).stdout).toBe(
      '{"id":-9223372036854775808,"name":"Min","version":3}\n',
    );
    expect((await plants(['get', '9223372036854775807', '--json'])).stdout).toBe(
      '{"id":9223372036854775807,"name":"Max","version":4}\n',
    );
  });

  it('deletes a plant; a second delete and a get then answer 404 (exit 1), from the Error body', async () => {
    await plants(['create', '--id', '42', '--name', 'Ivy']);
    expect(await plants(['delete', '42'])).toEqual({ code: 0, stdout: 'Deleted plant 42.\n', stderr: '' });
    expect(await plants(['delete', '42'])).toEqual({
      code: 1,
      stdout: '',
      stderr: 'plants: 404 There is no plant with id 42.\n',
    });
    expect(await plants(['get', '42', '--json'])).toEqual({
      code: 1,
      stdout: '',
      stderr: '{"error":404,"message":"There is no plant with id 42."}\n',
    });
    await plants(['create', '--id', '43', '--name', 'Ivy']);
    expect(await plants(['delete', '43', '--json'])).toEqual({
      code: 0,
      stdout: '{"id":43,"deleted":true}\n',
      stderr: '',
    });
  });

  it('prints the server message of a refused create and exits 1', async () => {
    expect(await plants(['create', '--id', '9007199254740993', '--name', 'Again'])).toEqual({
      code: 1,
      stdout: '',
      stderr: 'plants: 409 A plant with id 9007199254740993 already exists.\n',
    });
    expect(await plants(['get', '1'], { PLANTS_TOKEN: 'wrong' })).toEqual({
      code: 1,
      stdout: '',
      stderr: 'plants: 401 The bearer token is not valid.\n',
    });
  });

  it('takes --url and --token over PLANTS_URL and PLANTS_TOKEN', async () => {
    const run = await plants(['get', '9007199254740992', '--url', api.url, '--token', TOKEN, '--json'], {
      PLANTS_URL: 'http://127.0.0.1:1',
      PLANTS_TOKEN: 'wrong',
    });
    expect(run).toEqual({
      code: 0,
      stdout: '{"id":9007199254740992,"name":"Moss","version":2}\n',
      stderr: '',
    });
  });
});

describe('plants list', () => {
  let listApi: ApiProcess;
  const listed = (args: string[]) => plants(['list', ...args], { PLANTS_URL: listApi.url });

  beforeAll(async () => {
    listApi = await startApiProcess({ token: TOKEN });
    for (const [id, name] of [
      ['3', 'Fern'],
      ['1', 'Rose'],
      ['9223372036854775807', 'Max'],
      ['2', 'Sweet basil'],
    ]) {
      await plants(['create', '--id', id!, '--name', name!, '--tag', 'x'], { PLANTS_URL: listApi.url });
    }
  });
  afterAll(async () => {
    await listApi?.stop();
    listApi?.cleanup();
  });

  it('shows one page as a table and says on stderr how to read the next', async () => {
    expect(await listed(['--limit', '2'])).toEqual({
      code: 0,
      stdout: 'ID  NAME         TAG\n 1  Rose         x\n 2  Sweet basil  x\n',
      stderr: 'More plants follow: plants list --after 2 (or --all)\n',
    });
  });

  it('answers JSON with the next cursor, and --all reads every page', async () => {
    expect((await listed(['--limit', '3', '--after', '1', '--json'])).stdout).toBe(
      '{"plants":[{"id":2,"name":"Sweet basil","tag":"x","version":4},{"id":3,"name":"Fern","tag":"x","version":1},' +
        '{"id":9223372036854775807,"name":"Max","tag":"x","version":3}],"next":null}\n',
    );
    const all = await listed(['--all', '--limit', '1', '--json']);
    expect(all.code).toBe(0);
    expect(all.stdout).toBe(
      '{"plants":[{"id":1,"name":"Rose","tag":"x","version":2},{"id":2,"name":"Sweet basil","tag":"x","version":4},' +
        '{"id":3,"name":"Fern","tag":"x","version":1},{"id":9223372036854775807,"name":"Max","tag":"x","version":3}],' +
        '"next":null}\n',
    );
    expect((await listed(['--limit', '2', '--json'])).stdout).toMatch(/"next":2}\n$/);
  });

  it('says so when there is nothing to list', async () => {
    expect(await listed(['--after', '9223372036854775807'])).toEqual({
      code: 0,
      stdout: 'No plants.\n',
      stderr: '',
    });
  });
});

describe('plants usage and failures', () => {
  it.each([
    [[], 'a command is needed.'],
    [['grow'], 'unknown command "grow".'],
    [['constructor'], 'unknown command "constructor".'],
    [['get'], 'get needs one id.'],
    [['get', '1', '2'], 'get needs one id.'],
    [['get', 'abc'], 'the id must be an integer from -9223372036854775808 to 9223372036854775807 ("abc").'],
    [
      ['get', '9223372036854775808'],
      'the id must be an integer from -9223372036854775808 to 9223372036854775807 ("9223372036854775808").',
    ],
    [['get', '1.5'], 'the id must be an integer from -9223372036854775808 to 9223372036854775807 ("1.5").'],
    [['create', '--id', '1'], 'create needs --name <name>.'],
    [['create', '--name', 'Fern'], 'create needs --id <id>.'],
    [['list', '--limit', '0'], '--limit must be an integer from 1 to 1000 ("0").'],
    [['list', '--limit', '1001'], '--limit must be an integer from 1 to 1000 ("1001").'],
    [['list', '--name', 'x'], 'list takes no --name.'],
    [['list', 'extra'], 'list takes no operand ("extra").'],
    [['get', '1', '--url', 'ftp://x'], 'the URL "ftp://x" is not http: or https:.'],
  ])('plants %j exits 2 without sending anything', async (args, message) => {
    const before = requestsLogged();
    const run = await plants(args);
    expect(run).toEqual({
      code: 2,
      stdout: '',
      stderr: `plants: ${message}\nRun "plants --help" for usage.\n`,
    });
    expect(requestsLogged()).toBe(before);
  });

  it('exits 2 on an unknown option, with the explanation of node:util', async () => {
    const run = await plants(['get', '1', '--colour']);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/^plants: Unknown option '--colour'.*\nRun "plants --help" for usage\.\n$/s);
  });

  it('exits 2 without a token', async () => {
    expect(await plants(['get', '1'], { PLANTS_TOKEN: undefined })).toEqual({
      code: 2,
      stdout: '',
      stderr:
        'plants: a bearer token is needed: set PLANTS_TOKEN (or pass --token), or run plants login.\nRun "plants --help" for usage.\n',
    });
  });

  it('exits 3 when nothing answers', async () => {
    const url = `http://127.0.0.1:${await closedPort()}`;
    const run = await plants(['get', '1'], { PLANTS_URL: url });
    expect(run.code).toBe(3);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(
      new RegExp(
        `^plants: \\[GET\\] ${url}/plants/1: no response \\(fetch failed: connect ECONNREFUSED .+\\)\\n$`,
      ),
    );
  });

  it('documents the commands, options and exit statuses in --help', async () => {
    const run = await plants(['--help'], { PLANTS_TOKEN: undefined });
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^Usage: plants <command> \[options\]/);
    for (const text of [
      'create --id',
      'list [--tag <tag>] [--name-prefix <text>] [--limit',
      'get <id> [--etag]',
      'update <id> [--name <name>] [--tag <tag> | --clear-tag] [--if-match <etag>]',
      'import <file> [--format ndjson|csv] [--on-conflict skip|update]',
      'endpoints update <id> [--events <types>]',
      'get <id>',
      'delete <id>',
      'watch [--after <event id>] [--type <type>]',
      'import <file> [--format ndjson|csv]',
      'export [--format ndjson|csv]',
      '--json',
      'PLANTS_URL',
    ]) {
      expect(run.stdout).toContain(text);
    }
    expect(run.stdout).toContain(
      'Exit status: 0 ok, 1 the server answered with an error (import: a line was invalid or failed),\n' +
        '2 wrong usage',
    );
  });
});
