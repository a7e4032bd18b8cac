import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ApiProcess, apiProcessPerFile, startApiProcess } from '@plant-store/api/testing';
import { type NewPlant, stringifyJson } from '@plant-store/schema';
import { afterAll, describe, expect, it } from 'vitest';
import { createRestClient } from '../../src/index.ts';
import { runPlants, runPlantsOnTerminal } from '../support/plants-cli.ts';

const TOKEN = 'bulk-test-token-0123456789';
const INT64_RANGE = 'an integer from -9223372036854775808 to 9223372036854775807';

const api = apiProcessPerFile({ token: TOKEN });

const dir = mkdtempSync(join(tmpdir(), 'plants-bulk-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Writes a file in the test's directory and returns its path. */
function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

/** Runs the `plants` bin against `url` (default: this file's api). */
function plants(args: string[], url = api.url, input?: string) {
  return runPlants(args, { PLANTS_URL: url, PLANTS_TOKEN: TOKEN }, input);
}

/**
 * Every plant a store holds, read page by page with the REST client, as a catalog: id, name and tag
 * (the versions the store gave them are tested in whole-cli.test.ts).
 */
async function stored(url = api.url): Promise<NewPlant[]> {
  const client = createRestClient({ baseUrl: url, token: TOKEN });
  const plants: NewPlant[] = [];
  let after: bigint | undefined;
  do {
    const page = await client.listPlants({ limit: 1000, after });
    plants.push(...page.plants.map(({ version: _, ...plant }) => plant));
    after = page.next;
  } while (after !== undefined);
  return plants;
}

/** A fresh api process (an empty store), stopped after the file. */
const fresh: ApiProcess[] = [];
async function freshApi(env: Record<string, string> = {}): Promise<ApiProcess> {
  const started = await startApiProcess({ token: TOKEN, env });
  fresh.push(started);
  return started;
}
afterAll(async () => {
  for (const started of fresh) {
    await started.stop();
    started.cleanup();
  }
});

/** How many calls each /trpc request the api logged carried. */
function batchSizes(process: ApiProcess): number[] {
  return process.logs
    .map((line) => JSON.parse(line) as { msg?: string; path?: string })
    .filter((entry) => entry.msg === 'request' && entry.path?.startsWith('/trpc/'))
    .map((entry) => entry.path!.split(',').length);
}

describe('plants import', () => {
  it('creates the good lines of a CSV file, and reports duplicates and invalid lines by number', async () => {
    await createRestClient({ baseUrl: api.url, token: TOKEN }).createPlant({ id: 15n, name: 'Pre-existing' });
    const csv = file(
      'catalog.csv',
      [
        'id,name,tag',
        '1,Fern,herb',
        '9007199254740993,"Moss, green",',
        '-9223372036854775808,Min,""',
        '1,Fern again,',
        '12.5,Bad id,',
        ',No id,x',
        '9223372036854775808,Too big,',
        '13,"two',
        'lines",x',
        '14',
        '',
        '15,Pre-existing again,',
        `16,${'x'.repeat(201)},`,
        '',
      ].join('\n'),
    );

    expect(await plants(['import', csv])).toEqual({
      code: 1,
      stdout: '4 created, 2 already present, 5 invalid, 0 failed.\n',
      stderr: [
        `plants: line 6: invalid: id must be ${INT64_RANGE}`,
        'plants: line 7: invalid: id is required',
        `plants: line 8: invalid: id must be ${INT64_RANGE}`,
        'plants: line 11: invalid: has 1 field; the header names 3',
        'plants: line 14: invalid: name must be at most 200 characters',
        '',
      ].join('\n'),
    });
    expect(await stored()).toStrictEqual([
      { id: -9223372036854775808n, name: 'Min', tag: '' },
      { id: 1n, name: 'Fern', tag: 'herb' },
      { id: 13n, name: 'two\nlines', tag: 'x' },
      { id: 15n, name: 'Pre-existing' },
      { id: 9007199254740993n, name: 'Moss, green' },
    ]);

    // A re-run skips what exists: nothing new, the same invalid lines.
    const again = await plants(['import', csv, '--json']);
    expect(again.code).toBe(1);
    expect(JSON.parse(again.stdout)).toStrictEqual({
      created: 0,
      updated: 0,
      present: 6,
      invalid: [
        { line: 6, message: `id must be ${INT64_RANGE}` },
        { line: 7, message: 'id is required' },
        { line: 8, message: `id must be ${INT64_RANGE}` },
        { line: 11, message: 'has 1 field; the header names 3' },
        { line: 14, message: 'name must be at most 200 characters' },
      ],
      failed: [],
    });
    expect(await stored()).toHaveLength(5);
  });

  it('reads NDJSON exactly, never coercing a string id', async () => {
    const ndjson = file(
      'catalog.ndjson',
      [
        '{"id":101,"name":"Fern","tag":"herb"}',
        '{"id":9007199254740995,"name":"Moss"}',
        '{"id":"102","name":"String id"}',
        '{"id":101,"name":"Duplicate"}',
        'not json',
        '',
        '{"name":"No id","tag":3}',
        '[101]',
        '{"id":9223372036854775807,"name":"Max","tag":""}',
      ].join('\n'),
    );
    const run = await plants(['import', ndjson]);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('3 created, 1 already present, 4 invalid, 0 failed.\n');
    const lines = run.stderr.split('\n');
    expect(lines).toHaveLength(5);
    expect(lines[0]).toBe(`plants: line 3: invalid: id must be ${INT64_RANGE}`);
    expect(lines[1]).toMatch(/^plants: line 5: invalid: not JSON \(.+\)$/);
    expect(lines.slice(2)).toEqual([
      'plants: line 7: invalid: id is required; tag must be a string',
      'plants: line 8: invalid: must be a JSON object',
      '',
    ]);
    const all = await stored();
    expect(all.filter((plant) => plant.id >= 101n && plant.id !== 9007199254740993n)).toStrictEqual([
      { id: 101n, name: 'Fern', tag: 'herb' },
      { id: 9007199254740995n, name: 'Moss' },
      { id: 9223372036854775807n, name: 'Max', tag: '' },
    ]);
  });

  it('exits 0 when every line is created or already present, and reads stdin as "-"', async () => {
    const text = '{"id":201,"name":"A"}\n{"id":202,"name":"B","tag":"b"}\n{"id":101,"name":"Fern"}\n';
    expect(await plants(['import', '-', '--format', 'ndjson'], api.url, text)).toEqual({
      code: 0,
      stdout: '2 created, 1 already present, 0 invalid, 0 failed.\n',
      stderr: '',
    });
  });

  it('stops with exit 1 on a CSV header without id and name', async () => {
    expect(await plants(['import', file('bad-header.csv', 'id,title\n1,x\n')])).toEqual({
      code: 1,
      stdout: '',
      stderr: 'plants: the CSV header must name the columns id and name, and may name tag ("id,title").\n',
    });
  });

  it('keeps each batch under the server body limit when names and tags are long', async () => {
    const target = await freshApi();
    // About 1 kB a create as JSON: 100 of them would pass the server's 64 KiB and be refused (413).
    const long = (i: number) => ({ id: BigInt(i), name: '🌿'.repeat(200), tag: 'ü'.repeat(100) });
    const lines = Array.from({ length: 150 }, (_, i) => stringifyJson(long(i)));
    const run = await plants(['import', file('long.ndjson', `${lines.join('\n')}\n`)], target.url);

    expect(run).toEqual({
      code: 0,
      stdout: '150 created, 0 already present, 0 invalid, 0 failed.\n',
      stderr: '',
    });
    expect(Math.max(...batchSizes(target))).toBeLessThan(100);
    expect(await stored(target.url)).toStrictEqual(Array.from({ length: 150 }, (_, i) => long(i)));
  });

  it('waits out the rate limit (429, Retry-After) with batches no larger than the limit', async () => {
    const limited = await freshApi({ RATE_LIMIT_MAX: '50', RATE_LIMIT_WINDOW_SECONDS: '1' });
    const lines = Array.from({ length: 120 }, (_, i) => stringifyJson({ id: BigInt(i), name: `P${i}` }));
    const run = await plants(['import', file('limited.ndjson', `${lines.join('\n')}\n`)], limited.url);

    expect(run.code).toBe(0);
    expect(run.stdout).toBe('120 created, 0 already present, 0 invalid, 0 failed.\n');
    expect(run.stderr).toMatch(
      /^plants: the server's rate limit held the import back: [1-9][0-9]* batches waited as Retry-After said\.\n$/,
    );
    expect(limited.logs.some((line) => line.includes('"status":429'))).toBe(true);
    expect(Math.max(...batchSizes(limited))).toBe(50);
    expect(await stored(limited.url)).toHaveLength(120);
  });
});

describe('plants export, and a round trip into a fresh store', () => {
  /** Plants with the edges of int64, tags absent, empty and present, and CSV's special characters. */
  const seed = Array.from({ length: 2_345 }, (_, i): NewPlant => {
    const id = [-(2n ** 63n), 2n ** 53n + 1n, 2n ** 63n - 1n][i] ?? BigInt(i * 7919 - 5_000_000);
    const name = ['Fern, "the" green', 'multi\nline', '🌿 ünïcode', ` ${i}`][i % 4]!;
    const tag = [undefined, '', 'herb'][i % 3];
    return { id, name, ...(tag !== undefined && { tag }) };
  });
  const sorted = [...seed].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const ndjson = sorted.map((plant) => `${stringifyJson(plant)}\n`).join('');

  it('exports every plant as NDJSON in id order, exactly as imported', async () => {
    const source = await freshApi();
    const imported = await plants(['import', file('seed.ndjson', ndjson)], source.url);
    expect(imported).toEqual({
      code: 0,
      stdout: '2345 created, 0 already present, 0 invalid, 0 failed.\n',
      stderr: '',
    });
    // Bounded batches: the server's limit of 100 calls, several requests.
    expect(Math.max(...batchSizes(source))).toBe(100);

    expect(await plants(['export'], source.url)).toEqual({ code: 0, stdout: ndjson, stderr: '' });

    const csv = await plants(['export', '--format', 'csv'], source.url);
    expect(csv.code).toBe(0);
    expect(csv.stderr).toBe('');
    // No tag is an empty field, the empty tag "": the seed's first three plants show both.
    expect(csv.stdout.startsWith('id,name,tag\n-9223372036854775808,"Fern, ""the"" green",\n')).toBe(true);
    expect(csv.stdout).toContain('\n9007199254740993,"multi\nline",""\n');
    expect(csv.stdout.endsWith('\n9223372036854775807,🌿 ünïcode,herb\n')).toBe(true);

    for (const format of ['ndjson', 'csv']) {
      const exported = await plants(['export', '--format', format], source.url);
      const target = await freshApi();
      const path = file(`round-trip.${format}`, exported.stdout);
      expect((await plants(['import', path], target.url)).stdout).toBe(
        '2345 created, 0 already present, 0 invalid, 0 failed.\n',
      );
      expect(await stored(target.url)).toStrictEqual(sorted);
      expect((await plants(['export'], target.url)).stdout).toBe(ndjson);
    }
  });

  it('shows a progress bar on a terminal, and nothing of it when piped', async () => {
    const target = await freshApi();
    const path = file('terminal.ndjson', ndjson);
    const shown = await runPlantsOnTerminal(['import', path], {
      PLANTS_URL: target.url,
      PLANTS_TOKEN: TOKEN,
    });
    expect(shown.code).toBe(0);
    expect(shown.screen).toContain('100% | 2345/2345 records | ');
    expect(shown.screen).toMatch(/\| [0-9]+\/s \| .+ left/);
    expect(shown.screen).toContain('2345 created, 0 already present, 0 invalid, 0 failed.');

    const exported = await runPlantsOnTerminal(['export', '--format', 'csv'], {
      PLANTS_URL: target.url,
      PLANTS_TOKEN: TOKEN,
    });
    expect(exported.code).toBe(0);
    expect(exported.screen).toMatch(/2345 plants \| [0-9]+\/s/);

    // Piped, the same commands write nothing to stderr (the tests above compare it to '').
    const piped = await plants(['import', path], target.url);
    expect(piped).toEqual({
      code: 0,
      stdout: '0 created, 2345 already present, 0 invalid, 0 failed.\n',
      stderr: '',
    });
  });
});

describe('plants import and export usage', () => {
  it.each([
    [['import'], 'import needs one file.'],
    [['import', 'a.csv', 'b.csv'], 'import needs one file.'],
    [['import', '/nonexistent/plants.csv'], 'there is no file "/nonexistent/plants.csv".'],
    [
      ['import', file('plants.txt', '')],
      `say the format of "${join(dir, 'plants.txt')}" with --format ndjson or --format csv.`,
    ],
    [['import', 'x.csv', '--format', 'xml'], '--format must be ndjson or csv ("xml").'],
    [['export', 'extra'], 'export takes no operand ("extra").'],
    [['export', '--format', 'tsv'], '--format must be ndjson or csv ("tsv").'],
    [['export', '--id', '1'], 'export takes no --id.'],
  ])('plants %j exits 2 without sending anything', async (args, message) => {
    const before = api.logs.length;
    expect(await plants(args)).toEqual({
      code: 2,
      stdout: '',
      stderr: `plants: ${message}\nRun "plants --help" for usage.\n`,
    });
    expect(api.logs.slice(before).filter((line) => line.includes('"msg":"request"'))).toEqual([]);
  });

  it('stops at once, before reading the file, when the token is refused', async () => {
    const path = file('refused.ndjson', '{"id":301,"name":"Fern"}\n');
    for (const args of [['import', path], ['export']]) {
      expect(await runPlants(args, { PLANTS_URL: api.url, PLANTS_TOKEN: 'wrong' })).toEqual({
        code: 1,
        stdout: '',
        stderr: 'plants: 401 The bearer token is not valid.\n',
      });
    }
    expect((await stored()).some((plant) => plant.id === 301n)).toBe(false);
  });
});
