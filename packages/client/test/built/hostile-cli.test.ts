import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { fromSpreadsheetText, spreadsheetText } from '../../src/plant-file.ts';
import { type FakeServer, type Seen, sendJson, startFakeServer } from '../support/fake-server.ts';
import { BIN, runPlants, runPlantsOnTerminal } from '../support/plants-cli.ts';

// The `plants` CLI, run as users run it, against a server that sends what the real one never
// would (issue 22 point 6): each answer below is the hostile one.

const TOKEN = 'hostile-cli-token';

/**
 * Server text that steers a terminal: CSI (colour, clear screen), OSC (window title, ended by BEL),
 * backspace, carriage return, a C1 CSI, DEL and a right-to-left override.
 */
const HOSTILE = 'a\x1b[31mred\x1b[2J\x1b]0;pwned\x07\b\b\r\u009b1m\x7f\u202eevil';
/** …as the CLI shows it. */
const SHOWN =
  'a\\u001b[31mred\\u001b[2J\\u001b]0;pwned\\u0007\\u0008\\u0008\\u000d\\u009b1m\\u007f\\u202eevil';
/** What must not reach a terminal raw. */
const UNSAFE = /[\p{Cc}\u202A-\u202E\u2066-\u2069]/u;

const servers: FakeServer[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
});

async function fake(answer: (res: ServerResponse, request: Seen, index: number) => void) {
  const server = await startFakeServer(answer);
  servers.push(server);
  return server;
}

const dir = mkdtempSync(join(tmpdir(), 'plants-hostile-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

function plants(server: FakeServer, args: string[]) {
  return runPlants(args, { PLANTS_URL: server.url, PLANTS_TOKEN: TOKEN });
}

/** Output without its line ends holds no character a terminal would obey. */
function expectSafe(text: string): void {
  expect(text.replaceAll('\n', '')).not.toMatch(UNSAFE);
}

/** A tRPC batch answer creating every plant of the request `seen` (what import sent). */
function createdAll(res: ServerResponse, seen: Seen): void {
  const calls = Object.keys(JSON.parse(seen.body) as object).length;
  sendJson(
    res,
    200,
    Array.from({ length: calls }, () => ({ result: { data: { json: {} } } })),
  );
}

/** The plants an import sent in its tRPC batches, as the server read them. */
function sentPlants(server: FakeServer) {
  return server.requests
    .filter((seen) => seen.method === 'POST')
    .flatMap((seen) =>
      Object.values(JSON.parse(seen.body) as Record<string, { json: { id: string; name: string } }>),
    )
    .map(({ json }) => json);
}

describe('server text with terminal control sequences', () => {
  it('shows an error message escaped, and --json as JSON that reads back exactly', async () => {
    const server = await fake((res) => sendJson(res, 400, { error: 400, message: HOSTILE }));
    expect(await plants(server, ['get', '1'])).toEqual({
      code: 1,
      stdout: '',
      stderr: `plants: 400 ${SHOWN}\n`,
    });

    const json = await plants(server, ['get', '1', '--json']);
    expect(json.code).toBe(1);
    expectSafe(json.stderr);
    expect(JSON.parse(json.stderr)).toStrictEqual({ error: 400, message: HOSTILE });
  });

  it('shows names and tags escaped in the table, and --json reads back exactly', async () => {
    const server = await fake((res) =>
      sendJson(res, 200, [{ id: 1, name: HOSTILE, tag: HOSTILE, version: 1 }]),
    );
    expect(await plants(server, ['list'])).toEqual({
      code: 0,
      stdout: `ID  ${'NAME'.padEnd(SHOWN.length)}  TAG\n 1  ${SHOWN}  ${SHOWN}\n`,
      stderr: '',
    });
    const json = await plants(server, ['list', '--json']);
    expect(json.code).toBe(0);
    expectSafe(json.stdout);
    expect(JSON.parse(json.stdout)).toStrictEqual({
      plants: [{ id: 1, name: HOSTILE, tag: HOSTILE, version: 1 }],
      next: null,
    });
  });

  it('watch: shows events, the reconnection and the final error escaped', async () => {
    const event = {
      id: 1,
      type: 'plant.created',
      createdAt: '\x1b[8mhidden',
      plant: { id: 1, name: HOSTILE, version: 1 },
    };
    const server = await fake((res, _seen, index) => {
      if (index > 0) return sendJson(res, 401, { error: 401, message: HOSTILE });
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(`retry: 10\n\nid: 1\nevent: plant.created\ndata: ${JSON.stringify(event)}\n\n`);
    });
    const run = await plants(server, ['watch', '--after', '0']);
    expect(run).toEqual({
      code: 1,
      stdout:
        'TIME                      EVENT                         PLANT  NAME  TAG\n' +
        `\\u001b[8mhidden${' '.repeat(14)}  plant.created  ${' '.repeat(19)}1  ${SHOWN}\n`,
      stderr: `plants: no response (the server ended the stream); reconnecting in 0.01 s\nplants: 401 ${SHOWN}\n`,
    });
  });

  it('endpoints list and rotate: show URLs, descriptions, secrets and times escaped', async () => {
    const id = 'we_0123456789abcdef01234567';
    const url = `https://hooks.example/${HOSTILE}`;
    const server = await fake((res, seen) => {
      if (seen.method === 'GET') {
        sendJson(res, 200, [
          {
            id,
            url,
            description: HOSTILE,
            createdAt: '2026-11-25T00:00:00.000Z',
            events: ['plant.created'],
            disabled: null,
          },
        ]);
      } else {
        sendJson(res, 200, { id, secret: `whsec_${HOSTILE}`, previousSecretExpiresAt: HOSTILE });
      }
    });
    const shownUrl = `https://hooks.example/${SHOWN}`;
    expect(await plants(server, ['endpoints', 'list'])).toEqual({
      code: 0,
      stdout:
        `ID                           ${'URL'.padEnd(shownUrl.length)}  EVENTS         STATUS  CREATED                   DESCRIPTION\n` +
        `${id}  ${shownUrl}  plant.created  active  2026-11-25T00:00:00.000Z  ${SHOWN}\n`,
      stderr: '',
    });
    expect(await plants(server, ['endpoints', 'rotate', id])).toEqual({
      code: 0,
      stdout:
        `New signing secret for ${id}: whsec_${SHOWN}\n` +
        `The previous secret keeps signing alongside it until ${SHOWN}.\n` +
        'Keep the new secret now: it is not shown again.\n',
      stderr: '',
    });
  });

  it("import: shows the server's message for a refused line escaped, and --json reads back exactly", async () => {
    const server = await fake((res, seen) => {
      if (seen.method === 'GET') return sendJson(res, 200, []);
      sendJson(res, 200, [
        { error: { json: { message: HOSTILE, code: -32600, data: { httpStatus: 400 } } } },
      ]);
    });
    const path = file('refused.ndjson', '{"id":1,"name":"Fern"}\n');
    expect(await plants(server, ['import', path])).toEqual({
      code: 1,
      stdout: '0 created, 0 already present, 1 invalid, 0 failed.\n',
      stderr: `plants: line 1: invalid: ${SHOWN}\n`,
    });
    const json = await plants(server, ['import', path, '--json']);
    expectSafe(json.stdout);
    expect(JSON.parse(json.stdout)).toStrictEqual({
      created: 0,
      updated: 0,
      present: 0,
      invalid: [{ line: 1, message: HOSTILE }],
      failed: [],
    });
  });

  it('export: NDJSON reads back exactly with nothing raw; CSV keeps the text, escaped only on a terminal', async () => {
    const server = await fake((res) =>
      sendJson(res, 200, [{ id: 1, name: HOSTILE, tag: 'herb', version: 1 }]),
    );
    const ndjson = await plants(server, ['export']);
    expect(ndjson.code).toBe(0);
    expectSafe(ndjson.stdout);
    expect(ndjson.stdout.endsWith('\n')).toBe(true);
    expect(JSON.parse(ndjson.stdout)).toStrictEqual({ id: 1, name: HOSTILE, tag: 'herb' });

    // A CSV file is data: its text stays as stored, so it imports back exactly.
    expect((await plants(server, ['export', '--format', 'csv'])).stdout).toBe(
      `id,name,tag\n1,"${HOSTILE}",herb\n`,
    );
    const shown = await runPlantsOnTerminal(['export', '--format', 'csv'], {
      PLANTS_URL: server.url,
      PLANTS_TOKEN: TOKEN,
    });
    expect(shown.code).toBe(0);
    expect(shown.screen).toContain(`1,${SHOWN},herb`);
    expect(shown.screen).not.toContain('\x1b]0;pwned');
  });
});

describe('export --format csv and formula injection', () => {
  /** Names and tags that spreadsheets run as formulas, and the edge cases of the quote. */
  const risky = [
    { id: -5n, name: '-5', tag: '-' },
    { id: 1n, name: '=HYPERLINK("https://evil.example","click")', tag: '@SUM(A1)' },
    { id: 2n, name: '+1', tag: '\tx' },
    { id: 3n, name: '\rx', tag: '＝1' },
    { id: 4n, name: "'=already quoted", tag: "'plain quote" },
    { id: 5n, name: 'Fern', tag: 'a=b' },
  ];

  it('starts each formula-like name and tag with a quote, and import gives back the originals', async () => {
    const source = await fake((res) =>
      sendJson(
        res,
        200,
        risky.map(({ id, ...plant }) => ({ id: Number(id), ...plant, version: 1 })),
      ),
    );
    const exported = await plants(source, ['export', '--format', 'csv']);
    expect(exported).toEqual({
      code: 0,
      stdout:
        'id,name,tag\n' +
        "-5,'-5,'-\n" +
        `1,"'=HYPERLINK(""https://evil.example"",""click"")",'@SUM(A1)\n` +
        "2,'+1,'\tx\n" +
        `3,"'\rx",'＝1\n` +
        "4,''=already quoted,'plain quote\n" +
        '5,Fern,a=b\n',
      stderr: '',
    });

    const target = await fake((res, seen) =>
      seen.method === 'GET' ? sendJson(res, 200, []) : createdAll(res, seen),
    );
    const imported = await plants(target, ['import', file('risky.csv', exported.stdout)]);
    expect(imported).toEqual({
      code: 0,
      stdout: '6 created, 0 already present, 0 invalid, 0 failed.\n',
      stderr: '',
    });
    expect(sentPlants(target)).toStrictEqual(risky.map(({ id, ...plant }) => ({ id: String(id), ...plant })));
  });

  it.each([
    ['', ''],
    ["'", "'"],
    ["''", "''"],
    ['=', "'="],
    ["'=", "''="],
    ["''=1", "'''=1"],
    ['-', "'-"],
    ['x=1', 'x=1'],
    [' =1', ' =1'],
    ['\r', "'\r"],
    ['＠', "'＠"],
  ])('writes %j as %j and reads it back', (text, written) => {
    expect(spreadsheetText(text)).toBe(written);
    expect(fromSpreadsheetText(written)).toBe(text);
  });
});

describe('list --all against a server that never stops paging', () => {
  it('exits 1 with one line when the next page does not come after the plants listed', async () => {
    const server = await fake((res) =>
      sendJson(res, 200, [{ id: 1, name: 'Fern', version: 1 }], {
        link: '</plants?limit=1&after=1>; rel="next"',
      }),
    );
    expect(await plants(server, ['list', '--all'])).toEqual({
      code: 1,
      stdout: '',
      stderr: `plants: [GET] ${server.url}/plants?after=1: 200 its next page (after=1) does not come after the plants it lists\n`,
    });
    expect(server.requests.map((seen) => seen.url)).toStrictEqual(['/plants', '/plants?after=1']);
  });

  it('reads on past a page without plants (a spent scan budget), but exits 1 when its next page does not move on', async () => {
    const server = await fake((res) => sendJson(res, 200, [], { link: '</plants?after=5>; rel="next"' }));
    expect(await plants(server, ['list', '--all'])).toEqual({
      code: 1,
      stdout: '',
      stderr: `plants: [GET] ${server.url}/plants?after=5: 200 its next page (after=5) does not come after the after it was asked with (5)\n`,
    });
    expect(server.requests.map((seen) => seen.url)).toStrictEqual(['/plants', '/plants?after=5']);
  });

  it('stops at --max-plants while the pages keep coming, with exit 1', async () => {
    const server = await fake((res, _seen, index) =>
      sendJson(res, 200, [{ id: index + 1, name: 'Fern', version: 1 }], {
        link: `</plants?after=${index + 1}>; rel="next"`,
      }),
    );
    expect(await plants(server, ['list', '--all', '--max-plants', '5'])).toEqual({
      code: 1,
      stdout: '',
      stderr:
        'plants: list --all reads at most 5 plants (--max-plants), and the server has more; plants export writes any number.\n',
    });
    expect(server.requests).toHaveLength(5);
  });

  it('stops at 100,000 plants by default', async () => {
    const server = await fake((res, _seen, index) => {
      const plants = Array.from({ length: 1000 }, (_, i) => ({
        id: index * 1000 + i + 1,
        name: 'Fern',
        version: 1,
      }));
      sendJson(res, 200, plants, { link: `</plants?limit=1000&after=${(index + 1) * 1000}>; rel="next"` });
    });
    expect(await plants(server, ['list', '--all', '--limit', '1000'])).toEqual({
      code: 1,
      stdout: '',
      stderr:
        'plants: list --all reads at most 100000 plants (--max-plants), and the server has more; plants export writes any number.\n',
    });
    expect(server.requests).toHaveLength(100);
  });

  it('exits 2 on --max-plants without --all, or not a count', async () => {
    const server = await fake((res) => sendJson(res, 200, []));
    for (const [args, message] of [
      [['list', '--max-plants', '5'], '--max-plants needs --all.'],
      [['list', '--all', '--max-plants', '0'], '--max-plants must be an integer from 1 to 999999999 ("0").'],
    ] as const) {
      expect(await plants(server, [...args])).toEqual({
        code: 2,
        stdout: '',
        stderr: `plants: ${message}\nRun "plants --help" for usage.\n`,
      });
    }
    expect(server.requests).toHaveLength(0);
  });

  it('export: exits 1 when the next page repeats, after writing the pages read', async () => {
    const server = await fake((res) =>
      sendJson(res, 200, [{ id: 7, name: 'Fern', version: 1 }], {
        link: '</plants?limit=1000&after=7>; rel="next"',
      }),
    );
    expect(await plants(server, ['export'])).toEqual({
      code: 1,
      stdout: '{"id":7,"name":"Fern"}\n',
      stderr: `plants: [GET] ${server.url}/plants?limit=1000&after=7: 200 its next page (after=7) does not come after the plants it lists\n`,
    });
    expect(server.requests).toHaveLength(2);
  });

  it('endpoints deliveries --all: exits 1 when a next page is one already shown', async () => {
    const endpoint = 'we_0123456789abcdef01234567';
    const ids = ['a', 'b', 'c'].map((hex) => `msg_${hex.repeat(32)}`);
    // Page 0 links to page 1, page 1 to page 2, page 2 back to page 1.
    const server = await fake((res, _seen, index) => {
      const delivery = {
        id: ids[index],
        event: 'webhook.ping',
        status: 'delivered',
        attempts: 1,
        lastResponseCode: 200,
        lastError: null,
        nextAttemptAt: null,
        createdAt: '2026-11-25T00:00:00.000Z',
      };
      const next = ids[index === 2 ? 0 : index];
      sendJson(res, 200, [delivery], {
        link: `</webhook-endpoints/${endpoint}/deliveries?limit=100&before=${next}>; rel="next"`,
      });
    });
    const run = await plants(server, ['endpoints', 'deliveries', endpoint, '--all']);
    expect(run.code).toBe(1);
    expect(run.stdout.split('\n')).toHaveLength(5);
    expect(run.stderr).toBe(
      `plants: the server's next page (--before ${ids[0]}) is one already shown: stopped.\n`,
    );
    expect(server.requests).toHaveLength(3);
  });
});

describe('Retry-After past what plants waits', () => {
  const refusing = (retryAfter: string) =>
    fake((res) =>
      sendJson(res, 429, { error: 429, message: 'Too many requests.' }, { 'retry-after': retryAfter }),
    );

  it.each(['999999999', '2000000'])(
    'export: Retry-After: %s fails at once, with one request',
    async (seconds) => {
      const server = await refusing(seconds);
      expect(await plants(server, ['export'])).toEqual({
        code: 1,
        stdout: '',
        stderr:
          `plants: the server asks to retry after ${seconds} s (Retry-After); plants waits 60 s at most.\n` +
          'plants: 429 Too many requests.\n',
      });
      expect(server.requests).toHaveLength(1);
    },
  );

  it('export: an HTTP date years ahead fails at once too', async () => {
    const server = await refusing('Fri, 31 Dec 9999 23:59:59 GMT');
    const run = await plants(server, ['export']);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      /^plants: the server asks to retry after [0-9]{12} s \(Retry-After\); plants waits 60 s at most\.\nplants: 429 Too many requests\.\n$/,
    );
    expect(server.requests).toHaveLength(1);
  });

  it('import: a batch refused with Retry-After: 999999999 fails its lines at once', async () => {
    const server = await fake((res, seen) => {
      if (seen.method === 'GET') return sendJson(res, 200, []);
      // A refusal of the whole batch, as the server words it under /trpc: one tRPC error.
      const error = {
        message: 'Too many requests.',
        code: -32029,
        data: { code: 'TOO_MANY_REQUESTS', httpStatus: 429 },
      };
      sendJson(res, 429, { error: { json: error } }, { 'retry-after': '999999999' });
    });
    const path = file('limited.ndjson', '{"id":1,"name":"Fern"}\n{"id":2,"name":"Moss"}\n');
    expect(await plants(server, ['import', path])).toEqual({
      code: 1,
      stdout: '0 created, 0 already present, 0 invalid, 2 failed.\n',
      stderr:
        'plants: the server asks to retry after 999999999 s (Retry-After); plants waits 60 s at most.\n' +
        'plants: line 1: failed: 429 Too many requests.\n' +
        'plants: line 2: failed: 429 Too many requests.\n',
    });
    expect(server.requests.map((seen) => seen.method)).toStrictEqual(['GET', 'POST']);
  });

  it('watch: reconnects after at most 30 s whatever Retry-After says', async () => {
    const server = await fake((res) =>
      sendJson(res, 503, { error: 503, message: 'Restarting.' }, { 'retry-after': '999999999' }),
    );
    const child = spawn(process.execPath, [BIN, 'watch'], {
      env: { PATH: process.env.PATH ?? '', PLANTS_URL: server.url, PLANTS_TOKEN: TOKEN },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    const said = new Promise<void>((resolve) =>
      child.stderr.on('data', (chunk) => {
        stderr += chunk;
        if (stderr.endsWith('\n')) resolve();
      }),
    );
    const exited = new Promise((resolve) => child.once('exit', resolve));
    await said;
    child.kill('SIGINT');
    expect(await exited).toBe(0);
    expect(stderr).toBe('plants: Restarting.; reconnecting in 30 s\n');
  });
});

describe('a malformed answer', () => {
  it.each([
    ['<http://[::1>; rel="next"', "the answer's Link header is malformed (Invalid URL)"],
    [
      '</plants?limit=1>; rel="next"',
      "the answer's Link header is malformed (the next page's URL has no after parameter)",
    ],
    ['</plants?after=abc>; rel="next"', "its next page's after (abc) is not a plant id"],
    [
      '</plants?after=9223372036854775808>; rel="next"',
      "its next page's after (9223372036854775808) is not a plant id",
    ],
  ])('Link: %s exits 1 with one line', async (link, reason) => {
    const server = await fake((res) => sendJson(res, 200, [{ id: 1, name: 'Fern', version: 1 }], { link }));
    expect(await plants(server, ['list'])).toEqual({
      code: 1,
      stdout: '',
      stderr: `plants: [GET] ${server.url}/plants: 200 ${reason}\n`,
    });
  });

  it('import: a tRPC batch answer past 16 MiB fails its lines, read no further', async () => {
    let cut: Promise<boolean> | undefined;
    const server = await fake((res, seen) => {
      if (seen.method === 'GET') return sendJson(res, 200, []);
      res.writeHead(200, { 'content-type': 'application/json' });
      const chunk = 'x'.repeat(1024 * 1024);
      cut = new Promise((resolve) => res.once('close', () => resolve(!res.writableFinished)));
      let written = 0;
      const write = () => {
        while (written++ < 64) if (!res.write(chunk)) return void res.once('drain', write);
        res.end();
      };
      write();
    });
    expect(await plants(server, ['import', file('flooded.ndjson', '{"id":1,"name":"Fern"}\n')])).toEqual({
      code: 1,
      stdout: '0 created, 0 already present, 0 invalid, 1 failed.\n',
      stderr: `plants: line 1: failed: [POST] ${server.url}/trpc/plants.create: 200 the answer is larger than 16 MiB\n`,
    });
    expect(await cut).toBe(true);
  });

  it('import: a tRPC batch answer of nulls fails its lines, without a stack trace', async () => {
    const server = await fake((res, seen) => sendJson(res, 200, seen.method === 'GET' ? [] : [null]));
    expect(await plants(server, ['import', file('null.ndjson', '{"id":1,"name":"Fern"}\n')])).toEqual({
      code: 1,
      stdout: '0 created, 0 already present, 0 invalid, 1 failed.\n',
      stderr: `plants: line 1: failed: [POST] ${server.url}/trpc/plants.create: 200 the answer is not a tRPC batch answer\n`,
    });
  });
});
