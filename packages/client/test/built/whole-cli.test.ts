import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { apiProcessPerFile } from '@plant-store/api/testing';
import { stringifyJson } from '@plant-store/schema';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRestClient, type PlantWithId, type RestClient } from '../../src/index.ts';
import { runPlants } from '../support/plants-cli.ts';

const TOKEN = 'whole-cli-token-0123456789';
const USAGE = '\nRun "plants --help" for usage.\n';

// Loopback endpoint URLs need WEBHOOK_ALLOW_PRIVATE_URLS (nothing is delivered to them here).
const api = apiProcessPerFile({ token: TOKEN, env: { WEBHOOK_ALLOW_PRIVATE_URLS: '1' } });

const dir = mkdtempSync(join(tmpdir(), 'plants-whole-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Writes a file in the test's directory and returns its path. */
function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

function plants(args: string[]) {
  return runPlants(args, { PLANTS_URL: api.url, PLANTS_TOKEN: TOKEN });
}

/** Request lines the api logged: proves a usage error sent nothing. */
function requestsLogged(): number {
  return api.logs.filter((line) => line.includes('"msg":"request"')).length;
}

/** The server's answer to a change whose expected version is not the plant's. */
const stale = (id: bigint, version: bigint) =>
  `Plant ${id} is at version ${version}, not the one this request expected; read it again and retry. Nothing was changed.`;

let rest: RestClient;
/** Every plant the store holds, read back through the api. */
async function stored(): Promise<PlantWithId[]> {
  const all: PlantWithId[] = [];
  for await (const plant of rest.allPlants()) all.push(plant);
  return all;
}

beforeAll(async () => {
  rest = createRestClient({ baseUrl: api.url, token: TOKEN });
  // Versions 1, 2, 3: each change's event id.
  await rest.createPlant({ id: 1n, name: 'Fern', tag: 'green' });
  await rest.createPlant({ id: 2n, name: 'Fern Boston', tag: 'green house' });
  await rest.createPlant({ id: 3n, name: 'Rose', tag: 'red' });
});

describe('plants get and update', () => {
  it('get prints the plant as before, its version in --json, and only its ETag with --etag', async () => {
    expect(await plants(['get', '1'])).toEqual({
      code: 0,
      stdout: 'ID  NAME  TAG\n 1  Fern  green\n',
      stderr: '',
    });
    expect(await plants(['get', '1', '--json'])).toEqual({
      code: 0,
      stdout: '{"id":1,"name":"Fern","tag":"green","version":1}\n',
      stderr: '',
    });
    expect(await plants(['get', '1', '--etag'])).toEqual({ code: 0, stdout: '"1"\n', stderr: '' });
  });

  it('update changes what it is told to, checks --if-match, and prints the plant', async () => {
    expect(await plants(['update', '1', '--name', 'Sword fern', '--if-match', '"1"'])).toEqual({
      code: 0,
      stdout: 'ID  NAME        TAG\n 1  Sword fern  green\n',
      stderr: '',
    });
    // A bare version is taken as its ETag.
    expect(await plants(['update', '1', '--clear-tag', '--if-match', '4', '--json'])).toEqual({
      code: 0,
      stdout: '{"id":1,"name":"Sword fern","version":5}\n',
      stderr: '',
    });
    expect(await plants(['update', '1', '--tag', 'fern', '--if-match', '*', '--json'])).toEqual({
      code: 0,
      stdout: '{"id":1,"name":"Sword fern","tag":"fern","version":6}\n',
      stderr: '',
    });
  });

  it('exits 1 with the server message on 412 and 404, changing nothing', async () => {
    expect(await plants(['update', '1', '--name', 'Lost', '--if-match', '"5"'])).toEqual({
      code: 1,
      stdout: '',
      stderr: `plants: 412 ${stale(1n, 6n)}\n`,
    });
    expect(await plants(['update', '1', '--name', 'Lost', '--if-match', '"4", "5"', '--json'])).toEqual({
      code: 1,
      stdout: '',
      stderr: `${stringifyJson({ error: 412, message: stale(1n, 6n) })}\n`,
    });
    expect(await plants(['delete', '3', '--if-match', '"1"'])).toEqual({
      code: 1,
      stdout: '',
      stderr: `plants: 412 ${stale(3n, 3n)}\n`,
    });
    expect(await plants(['update', '99', '--name', 'Nobody'])).toEqual({
      code: 1,
      stdout: '',
      stderr: 'plants: 404 There is no plant with id 99.\n',
    });
    expect(await stored()).toStrictEqual([
      { id: 1n, name: 'Sword fern', tag: 'fern', version: 6n },
      { id: 2n, name: 'Fern Boston', tag: 'green house', version: 2n },
      { id: 3n, name: 'Rose', tag: 'red', version: 3n },
    ]);
  });

  it('shows server text escaped for the terminal, as every command does', async () => {
    expect(await plants(['update', '3', '--name', 'Rose\u001b[2J\u202e'])).toEqual({
      code: 0,
      stdout: 'ID  NAME                 TAG\n 3  Rose\\u001b[2J\\u202e  red\n',
      stderr: '',
    });
    expect(await plants(['delete', '3', '--if-match', '"7"'])).toEqual({
      code: 0,
      stdout: 'Deleted plant 3.\n',
      stderr: '',
    });
  });

  it.each([
    [['update', '1'], 'update needs --name, --tag or --clear-tag.'],
    [['update', '1', '--tag', 'x', '--clear-tag'], 'give --tag or --clear-tag, not both.'],
    [['update', '1', '--name', 'x'.repeat(201)], '--name must be at most 200 characters.'],
    [
      ['update', '1', '--name', 'x', '--if-match', '42"'],
      '--if-match must be *, an ETag such as "42", or a version ("42"").',
    ],
    [['update', '--name', 'x'], 'update needs one id.'],
    [['get', '1', '--etag', '--json'], '--etag prints the ETag alone: leave out --json.'],
    [['list', '--tag', 'x'.repeat(101)], '--tag must be at most 100 characters.'],
    [['list', '--name-prefix', 'x'.repeat(201)], '--name-prefix must be at most 200 characters.'],
    [['import', 'x.csv', '--on-conflict', 'replace'], '--on-conflict must be skip or update ("replace").'],
    [['create', '--id', '5', '--name', 'x', '--if-match', '*'], 'create takes no --if-match.'],
  ])('plants %j exits 2 without sending anything', async (args, message) => {
    const before = requestsLogged();
    expect(await plants(args)).toEqual({ code: 2, stdout: '', stderr: `plants: ${message}${USAGE}` });
    expect(requestsLogged()).toBe(before);
  });
});

describe('plants list with filters', () => {
  beforeAll(async () => {
    await rest.createPlant({ id: 4n, name: 'Fern Bird’s nest', tag: 'green house' });
  });

  it('lists by tag and name prefix; the hint for the next page keeps the filters', async () => {
    expect(await plants(['list', '--tag', 'green house', '--name-prefix', 'Fern B'])).toEqual({
      code: 0,
      stdout:
        'ID  NAME              TAG\n 2  Fern Boston       green house\n 4  Fern Bird’s nest  green house\n',
      stderr: '',
    });
    expect(await plants(['list', '--tag', 'green'])).toEqual({ code: 0, stdout: 'No plants.\n', stderr: '' });
    expect(await plants(['list', '--tag', 'green house', '--name-prefix', 'Fern', '--limit', '1'])).toEqual({
      code: 0,
      stdout: 'ID  NAME         TAG\n 2  Fern Boston  green house\n',
      stderr: "More plants follow: plants list --tag 'green house' --name-prefix Fern --after 2 (or --all)\n",
    });
    expect(await plants(['list', '--name-prefix', 'fern'])).toEqual({
      code: 0,
      stdout: 'No plants.\n',
      stderr: '',
    });
  });

  it('reads every filtered page with --all', async () => {
    expect(await plants(['list', '--name-prefix', 'Fern', '--limit', '1', '--all', '--json'])).toEqual({
      code: 0,
      stdout:
        '{"plants":[{"id":2,"name":"Fern Boston","tag":"green house","version":2},' +
        '{"id":4,"name":"Fern Bird’s nest","tag":"green house","version":9}],"next":null}\n',
      stderr: '',
    });
  });
});

describe('plants import --on-conflict', () => {
  const lines = [
    '{"id": 1, "name": "Sword fern", "tag": "fern"}',
    '{"id": 2, "name": "Boston fern"}',
    '{"id": 10, "name": "Ivy", "tag": "climber"}',
    '{"id": "11", "name": "Bad id"}',
  ];
  const invalid =
    'plants: line 4: invalid: id must be an integer from -9223372036854775808 to 9223372036854775807\n';

  it('skips plants that exist by default', async () => {
    const catalog = file('skip.ndjson', `${lines.slice(0, 3).join('\n')}\n`);
    expect(await plants(['import', catalog])).toEqual({
      code: 0,
      stdout: '1 created, 2 already present, 0 invalid, 0 failed.\n',
      stderr: '',
    });
  });

  it('with update, makes each existing plant what its line says, and counts it updated', async () => {
    await rest.deletePlant(10n);
    const before = await stored();
    const catalog = file('update.ndjson', `${lines.join('\n')}\n`);
    expect(await plants(['import', catalog, '--on-conflict', 'update'])).toEqual({
      code: 1,
      stdout: '1 created, 2 updated, 1 invalid, 0 failed.\n',
      stderr: invalid,
    });
    const after = await stored();
    // Plant 1 was already as its line says: same version. Plant 2 lost its tag: a new version.
    expect(after).toStrictEqual([
      before[0],
      { id: 2n, name: 'Boston fern', version: expect.any(BigInt) },
      before[2],
      { id: 10n, name: 'Ivy', tag: 'climber', version: expect.any(BigInt) },
    ]);
    expect(after[1]!.version).toBeGreaterThan(before[2]!.version);

    // Run again: nothing more changes, and --json says what was done.
    expect(await plants(['import', catalog, '--on-conflict', 'update', '--json'])).toEqual({
      code: 1,
      stdout:
        '{"created":0,"updated":3,"present":0,"invalid":[{"line":4,"message":' +
        '"id must be an integer from -9223372036854775808 to 9223372036854775807"}],"failed":[]}\n',
      stderr: invalid,
    });
    expect(await stored()).toStrictEqual(after);
  });

  it('takes CSV tags as export writes them: empty is no tag, "" the empty tag', async () => {
    const catalog = file('update.csv', 'id,name,tag\n1,Sword fern,\n2,Boston fern,""\n');
    expect(await plants(['import', catalog, '--on-conflict', 'update'])).toEqual({
      code: 0,
      stdout: '0 created, 2 updated, 0 invalid, 0 failed.\n',
      stderr: '',
    });
    expect((await stored()).slice(0, 2).map(({ id, name, tag }) => ({ id, name, tag }))).toStrictEqual([
      { id: 1n, name: 'Sword fern', tag: undefined },
      { id: 2n, name: 'Boston fern', tag: '' },
    ]);
  });
});

describe('plants endpoints: events', () => {
  const ENDPOINT = /^we_[0-9a-f]{24}$/;

  it('registers with --events, changes them with update, and lists them', async () => {
    const url = 'http://127.0.0.1:9/hooks';
    const added = await plants([
      'endpoints',
      'add',
      url,
      '--events',
      'plant.deleted,plant.updated',
      '--json',
    ]);
    expect(added.code).toBe(0);
    const endpoint = JSON.parse(added.stdout) as { id: string; events: string[]; createdAt: string };
    expect(endpoint).toMatchObject({
      id: expect.stringMatching(ENDPOINT),
      events: ['plant.updated', 'plant.deleted'],
    });

    const updated = await plants([
      'endpoints',
      'update',
      endpoint.id,
      '--events',
      'plant.created',
      '--description',
      'CRM',
    ]);
    const row = (events: string, description: string) =>
      [endpoint.id, url, events, 'active', endpoint.createdAt, description].join('  ').trimEnd();
    const header = [
      'ID'.padEnd(27),
      'URL'.padEnd(url.length),
      'EVENTS'.padEnd(13),
      'STATUS',
      'CREATED'.padEnd(24),
      'DESCRIPTION',
    ];
    expect(updated).toEqual({
      code: 0,
      stdout: `${header.join('  ')}\n${row('plant.created', 'CRM')}\n`,
      stderr: '',
    });
    const cleared = await plants(['endpoints', 'update', endpoint.id, '--clear-description', '--json']);
    expect(JSON.parse(cleared.stdout)).toMatchObject({ events: ['plant.created'], description: null });
    expect((await plants(['endpoints', 'list'])).stdout).toBe(
      `${header.join('  ')}\n${row('plant.created', '')}\n`,
    );
  });

  it.each([
    [
      ['endpoints', 'add', 'http://127.0.0.1:9/x', '--events', 'plant.moved'],
      '--events must be plant.created, plant.updated, plant.deleted or a list of them ("plant.moved").',
    ],
    [
      ['endpoints', 'update', `we_${'0'.repeat(24)}`],
      'endpoints update needs --events, --description or --clear-description.',
    ],
    [
      ['endpoints', 'update', `we_${'0'.repeat(24)}`, '--description', 'x', '--clear-description'],
      'give --description or --clear-description, not both.',
    ],
  ])('plants %j exits 2 without sending anything', async (args, message) => {
    const before = requestsLogged();
    expect(await plants(args)).toEqual({ code: 2, stdout: '', stderr: `plants: ${message}${USAGE}` });
    expect(requestsLogged()).toBe(before);
  });
});
