import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { inProcessPerFile } from '@plant-store/api/testing/in-process';
import { describe, expect, it } from 'vitest';

const APP = new URL('../../', import.meta.url).pathname;
const BIN = new URL('../../node_modules/.bin/', import.meta.url).pathname;
const DOCUMENT = new URL('../../../../apps/api/openapi.json', import.meta.url).pathname;
const GENERATED = new URL('../../src/generated/plant-store.ts', import.meta.url).pathname;
const TOKEN = 'example-openapi-fetch-token';

const api = inProcessPerFile({
  token: TOKEN,
  env: {
    WEBHOOK_SECRETS_KEY: randomBytes(32).toString('base64'),
    WEBHOOK_ALLOW_PRIVATE_URLS: '1',
    WEBHOOK_POLL_INTERVAL_MS: '50',
  },
});
/** An api that allows three requests a minute, for the rate-limit program. */
const limited = inProcessPerFile({ token: TOKEN, env: { RATE_LIMIT_MAX: '3' } });

/** Runs `command` in this package; resolves with its exit code and output. */
function exec(command: string, args: string[], env: Record<string, string> = {}) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      command,
      args,
      { cwd: APP, env: { PATH: process.env.PATH ?? '', ...env } },
      (error, stdout, stderr) =>
        resolve({ code: typeof error?.code === 'number' ? error.code : error ? -1 : 0, stdout, stderr }),
    );
  });
}

describe('a client generated from apps/api/openapi.json with openapi-typescript + openapi-fetch', () => {
  it('generates from the committed document, type-checks the program, and runs it against a live api', async () => {
    rmSync(GENERATED, { force: true });
    const generated = await exec(`${BIN}openapi-typescript`, [DOCUMENT, '--output', GENERATED]);
    expect(generated.code, generated.stderr).toBe(0);
    expect(readFileSync(GENERATED, 'utf8')).toContain('"/plants/{id}": {');

    const typecheck = await exec(`${BIN}tsc`, ['--noEmit', '-p', '.']);
    expect(typecheck, 'tsc --noEmit').toEqual({ code: 0, stdout: '', stderr: '' });

    const run = await exec(`${BIN}tsx`, ['src/main.ts'], { PLANTS_URL: api.url, PLANTS_TOKEN: TOKEN });
    expect(run).toEqual({
      code: 0,
      stdout: [
        'created 2001: {"name":"Monstera","tag":"aroid"}',
        'created 2002: {"name":"Boston fern","tag":"fern"}',
        'created 2003: {"name":"Bird of paradise"}',
        'duplicate 2001: 409 409 A plant with id 2001 already exists.',
        'page 1: 2001, 2002',
        'page 2: 2003',
        'listed 3 plants',
        'got 2002: {"id":2002,"name":"Boston fern","tag":"fern","version":2}',
        'unchanged 2002: 304 "2"',
        'deleted 2002: 204',
        'get 2002: 404 404 There is no plant with id 2002.',
        'list with limit 0: 400 400 Invalid request parameters: limit must be an integer from 1 to 1000.',
        '',
      ].join('\n'),
      stderr: '',
    });
    // What the store holds afterwards, read without the generated client.
    const left = await fetch(`${api.url}/plants`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(await left.text()).toBe(
      '[{"id":2001,"name":"Monstera","tag":"aroid","version":1},{"id":2003,"name":"Bird of paradise","version":3}]',
    );
  }, 180_000);

  it('rejects, at type-check time, a call the document does not allow', async () => {
    // A project of its own inside this package (so it resolves openapi-fetch and the generated
    // types), outside what `tsc -p .` and the program see.
    const dir = mkdtempSync(join(APP, '.typecheck-'));
    writeFileSync(join(dir, 'tsconfig.json'), '{ "extends": "../tsconfig.json", "include": ["*.ts"] }\n');
    writeFileSync(
      join(dir, 'wrong.ts'),
      "import createClient from 'openapi-fetch';\n" +
        "import type { paths } from '../src/generated/plant-store.ts';\n" +
        "const client = createClient<paths>({ baseUrl: 'http://127.0.0.1:3000' });\n" +
        "await client.POST('/plants', { body: { id: 1 } });\n" +
        "await client.GET('/plants/{id}', { params: { path: { id: '1' } } });\n",
    );
    try {
      const typecheck = await exec(`${BIN}tsc`, ['--noEmit', '-p', dir]);
      expect(typecheck.code).toBe(2);
      expect(typecheck.stdout).toContain('wrong.ts(4,');
      expect(typecheck.stdout).toContain("Property 'name' is missing");
      expect(typecheck.stdout).toContain('wrong.ts(5,');
      expect(typecheck.stdout).toContain("Type 'string' is not assignable to type 'number'");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 180_000);

  it('reads a 429 and its Retry-After and rate-limit headers as the document types them', async () => {
    const run = await exec(`${BIN}tsx`, ['src/rate-limit.ts'], {
      PLANTS_URL: limited.url,
      PLANTS_TOKEN: TOKEN,
    });
    // The seconds left in the window depend on when the requests ran.
    run.stdout = run.stdout.replaceAll(/;t=\d+/g, ';t=N');
    expect(run).toEqual({
      code: 0,
      stdout: [
        'request 1: 200, RateLimit "default";r=2;t=N',
        'request 2: 200, RateLimit "default";r=1;t=N',
        'request 3: 200, RateLimit "default";r=0;t=N',
        'request 4: 429, Retry-After in seconds, RateLimit-Policy "default";q=3;w=60',
        '429 Too many requests: the limit is 3 per 60 s; retry in N s.',
        '',
      ].join('\n'),
      stderr: '',
    });
  }, 60_000);

  it('receives all four webhooks, each typed as its entry in the document declares it', async () => {
    const run = await exec(`${BIN}tsx`, ['src/webhooks.ts'], { PLANTS_URL: api.url, PLANTS_TOKEN: TOKEN });
    expect(run).toEqual({
      code: 0,
      stdout: [
        'plant.created 3001 Pilea',
        'plant.deleted 3001',
        'plant.updated 3001 Pilea peperomioides changed name',
        'webhook.ping from our endpoint',
        '',
      ].join('\n'),
      stderr: '',
    });
    // A delivery typed as another event's body does not compile.
    const dir = mkdtempSync(join(APP, '.typecheck-'));
    writeFileSync(join(dir, 'tsconfig.json'), '{ "extends": "../tsconfig.json", "include": ["*.ts"] }\n');
    writeFileSync(
      join(dir, 'wrong.ts'),
      "import type { webhooks } from '../src/generated/plant-store.ts';\n" +
        "type Deleted = webhooks['plant.deleted']['post']['requestBody']['content']['application/json'];\n" +
        "export const deleted: Deleted = { id: 1, name: 'x' };\n",
    );
    try {
      const typecheck = await exec(`${BIN}tsc`, ['--noEmit', '-p', dir]);
      expect(typecheck.code).toBe(2);
      expect(typecheck.stdout).toContain("'name' does not exist in type");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 180_000);

  it('keeps int64 ids exact with the recipe of docs/api.md, and Content-Location shows the trap', async () => {
    const run = await exec(`${BIN}tsx`, ['src/int64.ts'], { PLANTS_URL: api.url, PLANTS_TOKEN: TOKEN });
    expect(run).toEqual({
      code: 0,
      stdout: [
        'number 9007199254740993 stored as /plants/9007199254740992',
        'bigint 9007199254740993 stored as /plants/9007199254740993',
        'read back 9007199254740993 Exact: exact',
        '',
      ].join('\n'),
      stderr: '',
    });
    const stored = await fetch(`${api.url}/plants?after=9007199254740991`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(await stored.text()).toMatch(
      /^\[\{"id":9007199254740992,"name":"Rounded","version":\d+\},\{"id":9007199254740993,"name":"Exact","version":\d+\}\]$/,
    );
  }, 60_000);
});
