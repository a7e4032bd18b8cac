import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { type ApiProcess, startApiProcess } from '@plant-store/api/testing';
import { parseJson } from '@plant-store/schema';
import { afterEach, describe, expect, it } from 'vitest';
import { createRestClient } from '../../src/index.ts';
import { portOf, waitFor } from '../support/events.ts';

const BIN = new URL('../../bin/plants.js', import.meta.url).pathname;
const TOKEN = 'watch-test-token-0123456789';
const TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z {2}/;

const running: { api: ApiProcess[]; watchers: ChildProcess[] } = { api: [], watchers: [] };
afterEach(async () => {
  for (const child of running.watchers.splice(0)) child.kill('SIGKILL');
  for (const api of running.api.splice(0)) {
    await api.kill();
    api.cleanup();
  }
});

async function start(options: Parameters<typeof startApiProcess>[0] = {}): Promise<ApiProcess> {
  const api = await startApiProcess({ token: TOKEN, ...options });
  running.api.push(api);
  return api;
}

/** `plants watch …` as a real process; `lines(n)` waits for n lines of stdout. */
function watch(url: string, args: string[]) {
  const child = spawn(process.execPath, [BIN, 'watch', ...args], {
    env: { PATH: process.env.PATH ?? '', PLANTS_URL: url, PLANTS_TOKEN: TOKEN },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.watchers.push(child);
  const stdout: string[] = [];
  let stderr = '';
  createInterface({ input: child.stdout! }).on('line', (line) => stdout.push(line));
  child.stderr!.on('data', (chunk) => {
    stderr += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  return {
    stdout,
    get stderr() {
      return stderr;
    },
    async lines(count: number, timeoutMs = 20_000): Promise<string[]> {
      await waitFor(() => stdout.length >= count, {
        timeoutMs,
        failure: () => `${stdout.length} of ${count} lines; stderr: ${stderr}`,
      });
      return stdout.slice(0, count);
    },
    exited,
    /** SIGINT, as Ctrl-C sends; resolves with the exit code. */
    interrupt(): Promise<number | null> {
      child.kill('SIGINT');
      return exited;
    },
  };
}

describe('plants watch', () => {
  it('prints a row per event as they commit, and exits 0 on SIGINT', async () => {
    const api = await start();
    const rest = createRestClient({ baseUrl: api.url, token: TOKEN });
    const watcher = watch(api.url, ['--after', '0']);
    await rest.createPlant({ id: 9007199254740993n, name: 'Fern', tag: 'herb' });
    await rest.deletePlant(9007199254740993n);
    await rest.createPlant({ id: -9223372036854775808n, name: 'Min' });
    await rest.updatePlant(-9223372036854775808n, { tag: 'edge' });
    const lines = await watcher.lines(5);
    expect(lines[0]).toBe('TIME                      EVENT                         PLANT  NAME  TAG');
    expect(lines.slice(1).every((line) => TIME.test(line))).toBe(true);
    expect(lines.slice(1).map((line) => line.replace(TIME, ''))).toStrictEqual([
      'plant.created      9007199254740993  Fern  herb',
      'plant.deleted      9007199254740993',
      'plant.created  -9223372036854775808  Min',
      'plant.updated  -9223372036854775808  Min  edge',
    ]);
    expect(await watcher.interrupt()).toBe(0);
    expect(watcher.stderr).toBe('');
  });

  it('prints --json lines with exact ids, and keeps going across a SIGKILL and restart of the api', async () => {
    let api = await start();
    const { url, dataDir } = api;
    const rest = createRestClient({ baseUrl: url, token: TOKEN });
    await rest.createPlant({ id: 1n, name: 'Before the watch' });
    const watcher = watch(url, ['--json', '--after', '0']);
    await watcher.lines(1);
    await rest.createPlant({ id: 9223372036854775807n, name: 'Max' });
    await watcher.lines(2);
    await api.kill();
    api = await start({ dataDir, env: { PORT: portOf(url) } });
    await rest.createPlant({ id: 9007199254740993n, name: 'After the restart' });
    await rest.deletePlant(1n);
    const lines = await watcher.lines(4);
    const events = lines.map((line) => parseJson(line) as { id: bigint; type: string; plant: unknown });
    expect(events.map(({ type, plant }) => ({ type, plant }))).toStrictEqual([
      { type: 'plant.created', plant: { id: 1n, name: 'Before the watch', version: 1n } },
      { type: 'plant.created', plant: { id: 9223372036854775807n, name: 'Max', version: 2n } },
      { type: 'plant.created', plant: { id: 9007199254740993n, name: 'After the restart', version: 3n } },
      { type: 'plant.deleted', plant: { id: 1n } },
    ]);
    expect(lines[1]).toContain('"plant":{"id":9223372036854775807,"name":"Max","version":2}');
    expect(events.map(({ id }) => id)).toStrictEqual([1n, 2n, 3n, 4n]);
    // The reconnection is told on stderr; nothing is printed twice.
    expect(watcher.stderr).toMatch(/^plants: .*; reconnecting in \d+(\.\d+)? s$/m);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(watcher.stdout).toHaveLength(4);
    expect(await watcher.interrupt()).toBe(0);
  });

  it('prints only the types given with --type (repeated or a comma list)', async () => {
    const api = await start();
    const rest = createRestClient({ baseUrl: api.url, token: TOKEN });
    const deletes = watch(api.url, ['--json', '--after', '0', '--type', 'plant.deleted']);
    const both = watch(api.url, ['--json', '--after=0', '--type', 'plant.deleted', '--type=plant.created']);
    const listed = watch(api.url, ['--json', '--after', '0', '--type', 'plant.created,plant.deleted']);
    await rest.createPlant({ id: 1n, name: 'Fern' });
    await rest.deletePlant(1n);
    await rest.createPlant({ id: 2n, name: 'Moss' });
    await rest.deletePlant(2n);
    const lines = await deletes.lines(2);
    expect(lines.map((line) => parseJson(line))).toMatchObject([
      { id: 2n, type: 'plant.deleted', plant: { id: 1n } },
      { id: 4n, type: 'plant.deleted', plant: { id: 2n } },
    ]);
    expect(await both.lines(4)).toStrictEqual(await listed.lines(4));
    expect((await listed.lines(4)).map((line) => (parseJson(line) as { id: bigint }).id)).toStrictEqual([
      1n,
      2n,
      3n,
      4n,
    ]);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(deletes.stdout).toHaveLength(2);
    for (const watcher of [deletes, both, listed]) expect(await watcher.interrupt()).toBe(0);
  });

  it('exits 2 on a --type that is no event type, sending nothing', async () => {
    const api = await start();
    const watcher = watch(api.url, ['--type', 'plant.deleted,plant.moved']);
    expect(await watcher.exited).toBe(2);
    expect(api.logs.filter((line) => line.includes('"msg":"request"'))).toStrictEqual([]);
    expect(watcher.stderr).toBe(
      'plants: --type must be plant.created, plant.updated, plant.deleted or a list of them ("plant.moved").\n' +
        'Run "plants --help" for usage.\n',
    );
  });

  it('exits 1 with the server message when the events are no longer kept (410)', async () => {
    const api = await start({ env: { EVENTS_RETENTION_MS: '1000' } });
    const rest = createRestClient({ baseUrl: api.url, token: TOKEN });
    await rest.createPlant({ id: 1n, name: 'Soon pruned' });
    const deadline = Date.now() + 10_000;
    while (!api.logs.some((line) => line.includes('"msg":"events pruned"')) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const watcher = watch(api.url, ['--after', '0', '--json']);
    expect(await watcher.exited).toBe(1);
    expect(watcher.stdout).toStrictEqual([]);
    expect(watcher.stderr).toBe(
      '{"error":410,"message":"The events after 0 are no longer kept (see EVENTS_RETENTION_MS); start again without a resume id."}\n',
    );
  });

  it('exits 2 on an --after that is no event id, sending nothing', async () => {
    const api = await start();
    const watcher = watch(api.url, ['--after=-1']);
    expect(await watcher.exited).toBe(2);
    expect(api.logs.filter((line) => line.includes('"msg":"request"'))).toStrictEqual([]);
    expect(watcher.stderr).toBe(
      'plants: --after must be an event id, an integer from 0 to 9223372036854775807 ("-1").\nRun "plants --help" for usage.\n',
    );
  });
});
