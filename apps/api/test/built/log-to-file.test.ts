import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { apiProcessEnv, START_NODE_ARGS } from '../support/api-process.ts';

const MAIN = new URL('../../dist/main.js', import.meta.url).pathname;
const TOKEN = 'plant-store-test-token';

type Line = { msg: string; reqId?: string; url?: string; status?: number; route?: string };
const lines = (file: string): Line[] =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Line);

describe('the built api logging to a file', () => {
  let child: ChildProcess | undefined;
  let dir: string | undefined;
  afterEach(() => {
    child?.kill('SIGKILL');
    if (dir) rmSync(dir, { recursive: true, force: true });
    child = dir = undefined;
  });

  it('writes each request line while it runs, and every line once by its exit', async () => {
    dir = mkdtempSync(join(tmpdir(), 'plant-store-log-'));
    const file = join(dir, 'api.log');
    const out = openSync(file, 'w');
    child = spawn(process.execPath, [...START_NODE_ARGS, MAIN], {
      env: { ...apiProcessEnv(dir), API_TOKENS: TOKEN },
      stdio: ['ignore', out, 'inherit'],
    });
    closeSync(out);
    const exited = new Promise((resolve) => child!.once('exit', resolve));
    await expect
      .poll(() => lines(file).find((line) => line.msg === 'listening'), { timeout: 10_000 })
      .toBeTruthy();
    const url = lines(file).find((line) => line.msg === 'listening')!.url!;

    // A quiet server: nothing else is logged after these, so nothing else fills the writer's buffer.
    const ids = ['log-file-1', 'log-file-2', 'log-file-3'];
    for (const id of ids) {
      const res = await fetch(`${url}/plants/7`, {
        headers: { authorization: `Bearer ${TOKEN}`, 'x-request-id': id },
      });
      expect(res.status).toBe(404);
    }
    const requestLines = () =>
      lines(file).filter((line) => line.msg === 'request' && ids.includes(line.reqId!));
    await expect.poll(() => requestLines().map((line) => line.reqId), { timeout: 2_000 }).toStrictEqual(ids);
    expect(requestLines().map((line) => [line.route, line.status])).toStrictEqual(
      ids.map(() => ['/plants/{id}', 404]),
    );

    // A busy server: a turn's lines are written together (src/observability/log.ts), each one whole.
    const busy = Array.from({ length: 300 }, (_, i) => `log-file-busy-${i}`);
    const answers = await Promise.all(
      busy.map((id) =>
        fetch(`${url}/plants/7`, { headers: { authorization: `Bearer ${TOKEN}`, 'x-request-id': id } }),
      ),
    );
    expect(answers.map((res) => res.status)).toStrictEqual(busy.map(() => 404));
    const busyLines = () =>
      new Set(
        lines(file).flatMap((line) =>
          line.msg === 'request' && busy.includes(line.reqId!) ? [line.reqId] : [],
        ),
      );
    await expect.poll(() => busyLines().size, { timeout: 2_000 }).toBe(busy.length);

    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(requestLines().map((line) => line.reqId)).toStrictEqual(ids);
    expect(lines(file).at(-1)?.msg).toBe('stopped');
  });
});
