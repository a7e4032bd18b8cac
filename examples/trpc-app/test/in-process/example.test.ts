import { execFile } from 'node:child_process';
import { inProcessPerFile } from '@plant-store/api/testing/in-process';
import { describe, expect, it } from 'vitest';

const APP = new URL('../../', import.meta.url).pathname;
const TSX = new URL('../../node_modules/.bin/tsx', import.meta.url).pathname;
const TOKEN = 'example-app-token';

const api = inProcessPerFile({ token: TOKEN });

/** Runs the example as its `start` script does. */
function start(env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      TSX,
      ['src/main.ts'],
      { cwd: APP, env: { PATH: process.env.PATH ?? '', ...env } },
      (error, stdout, stderr) =>
        resolve({ code: typeof error?.code === 'number' ? error.code : error ? -1 : 0, stdout, stderr }),
    );
  });
}

describe('examples/trpc-app', () => {
  it('stocks the greenhouse over tRPC, and a second run finds it stocked', async () => {
    const env = { PLANTS_URL: api.url, PLANTS_TOKEN: TOKEN };
    expect(await start(env)).toEqual({
      code: 0,
      stdout:
        'created 1001 Monstera\ncreated 1002 Boston fern\ncreated 9007199254740993 Bird of paradise\n' +
        'the store holds 3 plants; 9007199254740993 is Bird of paradise\n',
      stderr: '',
    });
    expect((await start(env)).stdout).toBe(
      'already there: 1001 Monstera\nalready there: 1002 Boston fern\n' +
        'already there: 9007199254740993 Bird of paradise\n' +
        'the store holds 3 plants; 9007199254740993 is Bird of paradise\n',
    );
    const stored = await fetch(`${api.url}/plants/9007199254740993`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(await stored.text()).toBe('{"id":9007199254740993,"name":"Bird of paradise","version":3}');
  });

  it('says what it needs without a token', async () => {
    const run = await start({ PLANTS_URL: api.url });
    expect(run).toEqual({
      code: 2,
      stdout: '',
      stderr: 'Set PLANTS_TOKEN to a bearer token of the api (and PLANTS_URL if not local).\n',
    });
  });
});
