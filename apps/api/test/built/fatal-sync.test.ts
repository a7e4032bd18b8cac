import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseJson } from '@plant-store/schema';
import { describe, expect, it } from 'vitest';
import { type ApiProcess, startApiProcess } from '../support/api-process.ts';
import { deferAfterEach } from '../support/cleanups.ts';
import { type DiskFault, diskFaultEnv } from '../support/fault-injection.ts';
import { errorBody, JSON_HEADERS, postPlant, send } from '../support/http.ts';

const UNAVAILABLE = errorBody(503, 'The store is unavailable; retry the request later.');

type Outcome = { id: bigint; status: number; body: string; sentAfterFailure: boolean };
type LogLine = { level: number; msg: string; [key: string]: unknown };

const defer = deferAfterEach();

function exitOf(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

/** Every plant id the api serves, page by page over REST. */
async function servedIds(url: string): Promise<bigint[]> {
  const ids: bigint[] = [];
  let after = '';
  for (;;) {
    const page = await send(`${url}/plants?limit=1000${after}`, { headers: JSON_HEADERS });
    expect(page.status).toBe(200);
    const plants = parseJson(page.text) as { id: bigint }[];
    ids.push(...plants.map((plant) => plant.id));
    if (plants.length < 1000) return ids;
    after = `&after=${plants.at(-1)!.id}`;
  }
}

/**
 * Runs the built api on a fresh SQLite file with `fault` ready to strike the write-ahead log, keeps
 * 8 clients creating plants, strikes, and follows what every client saw until the process is gone.
 */
async function strike(fault: DiskFault) {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-fault-'));
  defer(() => rmSync(dir, { recursive: true, force: true }));
  const marker = join(dir, 'strike');
  // No rate limit: the 8 clients go on creating through the 2 s drain, where 503s come back at
  // thousands a second, and 429s past the token's limit would hide what this test checks.
  const api = await startApiProcess({ env: { ...diskFaultEnv(dir, fault, marker), RATE_LIMIT_MAX: '0' } });
  defer(() => api.cleanup());
  defer(() => api.child.kill('SIGKILL'));
  const exited = exitOf(api.child);
  let gone = false;
  void exited.then(() => {
    gone = true;
  });

  // Before the fault: acknowledged as usual.
  const outcomes: Outcome[] = [];
  for (let i = 1n; i <= 20n; i++) {
    const answer = await postPlant(api.url, `{"id":${i},"name":"Fern"}`);
    outcomes.push({ id: i, status: answer.status, body: answer.text, sentAfterFailure: false });
  }
  expect(outcomes.map((outcome) => outcome.status)).toStrictEqual(outcomes.map(() => 200));

  let failedAt: number | undefined;
  let readyz: { status: number; text: string } | undefined;
  let next = 1_000n;
  const client = async () => {
    while (!gone) {
      const id = next++;
      const sentAfterFailure = failedAt !== undefined;
      try {
        const answer = await postPlant(api.url, `{"id":${id},"name":"Fern"}`);
        outcomes.push({ id, status: answer.status, body: answer.text, sentAfterFailure });
        if (answer.status === 503 && failedAt === undefined) {
          failedAt = performance.now();
          readyz = await send(`${api.url}/readyz`);
        }
      } catch {
        // The process closed the connection on its way out: no answer.
        outcomes.push({ id, status: 0, body: '', sentAfterFailure });
        await sleep(10);
      }
    }
  };
  const clients = Array.from({ length: 8 }, client);
  await sleep(300);
  writeFileSync(marker, '');
  const code = await Promise.race([exited, sleep(15_000).then(() => 'still running')]);
  const exitedAt = performance.now();
  gone = true;
  await Promise.all(clients);
  return { api, code, outcomes, failedAt, exitedAt, readyz };
}

/** The checks every fault shares; resolves with the log line the failure wrote. */
async function expectFatal(run: Awaited<ReturnType<typeof strike>>): Promise<LogLine> {
  const { api, code, outcomes, failedAt, exitedAt, readyz } = run;
  // The process stopped itself, with a failure status for its supervisor, about 2 s after the fault.
  expect(code).toBe(1);
  expect(failedAt).toBeDefined();
  expect(exitedAt - failedAt!).toBeLessThan(6_000);
  expect(readyz).toMatchObject({ status: 503, text: UNAVAILABLE });

  // The write that met the fault was answered 503, as was every write sent after it: never a 200.
  const answered = outcomes.filter((outcome) => outcome.status !== 0);
  expect(answered.every((outcome) => outcome.status === 200 || outcome.status === 503)).toBe(true);
  expect(answered.filter((o) => o.status === 503).every((o) => o.body === UNAVAILABLE)).toBe(true);
  const after = outcomes.filter((outcome) => outcome.sentAfterFailure);
  expect(after.filter((outcome) => outcome.status === 200)).toStrictEqual([]);
  expect(after.filter((outcome) => outcome.status === 503).length).toBeGreaterThan(0);

  // One fatal line, and nothing that looks like a crash.
  const lines = api.logs.map((line) => JSON.parse(line) as LogLine);
  const fatal = lines.filter((line) => line.level === 60);
  expect(fatal).toHaveLength(1);
  expect(fatal[0]).toMatchObject({
    msg: 'store failed: refusing every request that needs it, exiting for a restart to recover from disk',
    exitCode: 1,
    exitInMs: 2_000,
  });

  // A restart on the same file serves every plant that was answered 200.
  const acknowledged = outcomes.filter((outcome) => outcome.status === 200).map((outcome) => outcome.id);
  expect(acknowledged.length).toBeGreaterThan(20);
  const restarted: ApiProcess = await startApiProcess({ dataDir: api.dataDir });
  try {
    expect((await send(`${restarted.url}/readyz`)).status).toBe(200);
    const served = new Set(await servedIds(restarted.url));
    expect(acknowledged.filter((id) => !served.has(id))).toStrictEqual([]);
    // And takes writes again.
    expect((await postPlant(restarted.url, '{"id":1,"name":"Fern"}')).status).toBe(409);
    expect((await postPlant(restarted.url, '{"id":-1,"name":"Moss"}')).status).toBe(200);
  } finally {
    expect(await restarted.stop()).toBe(0);
  }
  return fatal[0]!;
}

describe('a failed sync is fatal to the SQLite store (faults injected into the built api)', () => {
  it('fdatasync of the write-ahead log fails: 503 from then on, /readyz 503, exit 1, and a restart keeps every 200', async () => {
    const run = await strike('fdatasync');
    const fatal = await expectFatal(run);
    expect(fatal.reason).toMatch(/^the write-ahead log could not be synced: EIO: i\/o error, fdatasync/);
  }, 60_000);

  it('COMMIT fails (the log cannot be written): the same', async () => {
    const run = await strike('wal-write');
    const fatal = await expectFatal(run);
    expect(fatal.reason).toBe('the writes could not be committed: disk I/O error');
  }, 60_000);
});
