import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { LOG_BUFFER_BYTES } from '../../src/observability/log.ts';
import { type ApiProcess, startApiProcess } from '../support/api-process.ts';

const TOKEN = 'plant-store-test-token';
// Each request's access log line carries its path: about 4 KB a line.
const LONG_PATH = `/no-such-route/${'a'.repeat(4000)}`;

/** Sends `n` GETs of `path`, 20 at a time on kept-alive connections; resolves with their statuses. */
async function getMany(url: string, path: string, n: number): Promise<Map<number, number>> {
  const agent = new Agent({ keepAlive: true, maxSockets: 20 });
  const statuses = new Map<number, number>();
  let next = 0;
  const one = (): Promise<void> =>
    new Promise((resolve, reject) => {
      const req = request(
        `${url}${path}`,
        { agent, headers: { authorization: `Bearer ${TOKEN}` } },
        (res) => {
          statuses.set(res.statusCode!, (statuses.get(res.statusCode!) ?? 0) + 1);
          res.resume().on('end', resolve);
        },
      );
      req.on('error', reject).end();
    });
  const worker = async () => {
    while (next++ < n) await one();
  };
  await Promise.all(Array.from({ length: 20 }, worker));
  agent.destroy();
  return statuses;
}

async function droppedMetric(url: string): Promise<number> {
  const res = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
  const match = /^plant_store_log_lines_dropped_total (\d+)$/m.exec(await res.text());
  return Number(match?.[1]);
}

const rssMb = (pid: number) =>
  Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

describe('the built api with a stdout nobody reads', () => {
  let api: ApiProcess | undefined;
  afterEach(async () => {
    await api?.kill();
    api?.cleanup();
    api = undefined;
  });

  it('keeps answering with bounded memory, drops and counts the log lines it cannot keep, and exits on SIGTERM', async () => {
    api = await startApiProcess({ env: { RATE_LIMIT_MAX: '0' } });
    api.child.stdout!.pause();
    const pid = api.child.pid!;
    // 40 MB of log lines, five times what the logger may hold.
    const n = Math.ceil((5 * LOG_BUFFER_BYTES) / LONG_PATH.length);
    const rssBefore = rssMb(pid);
    expect(await getMany(api.url, LONG_PATH, n)).toStrictEqual(new Map([[404, n]]));
    const dropped = await droppedMetric(api.url);
    // All but what the buffer and the pipe hold: at least 3.5 of the 5 buffers' worth.
    expect(dropped).toBeGreaterThan(0.7 * n);
    expect(dropped).toBeLessThanOrEqual(n);
    expect(rssMb(pid) - rssBefore).toBeLessThan(60);
    // The lines it still holds cannot be written: it gives them up and exits, 0 as after any stop.
    const started = performance.now();
    expect(await api.stop()).toBe(0);
    expect(performance.now() - started).toBeLessThan(8_000);
  });

  it('says how many lines it dropped once stdout is read again, and logs as before', async () => {
    api = await startApiProcess({ env: { RATE_LIMIT_MAX: '0' } });
    const stdout = api.child.stdout!;
    stdout.pause();
    const n = Math.ceil((2 * LOG_BUFFER_BYTES) / LONG_PATH.length);
    await getMany(api.url, LONG_PATH, n);
    const dropped = await droppedMetric(api.url);
    expect(dropped).toBeGreaterThan(0);
    stdout.resume();
    const logs = api.logs;
    type Report = { level: number; dropped: number; droppedSinceStart: number };
    const reports = () =>
      logs.filter((l) => l.includes('log lines dropped')).map((l) => JSON.parse(l) as Report);
    // A report made while stdout was still paused can get through too (a short line fits where the
    // long request lines did not), and later drops then come in a later report: wait for the one
    // that counts every line dropped before stdout was read again.
    await expect
      .poll(() => reports().some((report) => report.droppedSinceStart >= dropped), { timeout: 10_000 })
      .toBe(true);
    for (const report of reports()) {
      expect(report.level).toBe(40);
      expect(report.dropped).toBeGreaterThan(0);
      expect(report.dropped).toBeLessThanOrEqual(report.droppedSinceStart);
    }
    await getMany(api.url, '/plants/1', 1);
    await expect
      .poll(() => logs.some((l) => l.includes('"route":"/plants/{id}"') && l.includes('"status":404')))
      .toBe(true);
  });
});
