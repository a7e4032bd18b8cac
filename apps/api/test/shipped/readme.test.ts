import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { lightTraffic, PNPM, ROOT, readmeShellLines, runShipped, startShipped } from '../support/shipped.ts';

/** How long the service must stay up after its first answer: a user opens /docs a minute later. */
const UP_FOR_MS = 60_000;

const clone = mkdtempSync(join(tmpdir(), 'plant-store-clone-'));
afterAll(() => rmSync(clone, { recursive: true, force: true }));

describe("the README's first command, in a fresh clone", () => {
  it('starts the service on the embedded store, keeps it up for a minute, and stops on Ctrl-C', async () => {
    const [startCommand] = readmeShellLines();
    expect(startCommand).toBe(`${PNPM} install && ${PNPM} start`);
    execFileSync('git', ['clone', '--quiet', '--depth', '1', `file://${ROOT}`, clone]);
    // Only PORT differs from a newcomer's run (a free port, so it never clashes with a running api).
    const service = await startShipped(startCommand!, {
      cwd: clone,
      env: { PORT: '0' },
      startTimeoutMs: 480_000,
    });
    try {
      const tokenFile = join(clone, 'apps/api/data/api-token');
      expect(statSync(tokenFile).mode & 0o777).toBe(0o600);
      const token = readFileSync(tokenFile, 'utf8').trim();
      expect(token).toMatch(/^pst_[A-Za-z0-9_-]{43}$/);

      const traffic = await lightTraffic([{ url: service.url, token }], {
        until: Date.now() + UP_FOR_MS,
        everyMs: 2_000,
        firstId: 1_000n,
      });
      expect(traffic.failures).toEqual([]);
      expect(service.alive()).toBe(true);

      // A minute in, as the README's next lines show: create with the generated token, read the docs.
      const answer = await fetch(`${service.url}/plants`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: '{"id":9007199254740993,"name":"Monstera","tag":"aroid"}',
      });
      expect(answer.status).toBe(200);
      expect(await answer.text()).toBe('{"name":"Monstera","tag":"aroid"}');
      expect((await fetch(`${service.url}/plants`, { method: 'POST', body: '{}' })).status).toBe(401);
      expect((await fetch(`${service.url}/docs`)).status).toBe(200);

      // The admin commands, with the README's default DATABASE_URL, next to the running service.
      const created = await runShipped(
        `${PNPM} --filter @plant-store/api admin token create --name reporting --scope read`,
        {
          cwd: clone,
        },
      );
      expect(created.code, created.stderr).toBe(0);
      const issued = created.stdout.trim().split('\n').at(-1)!;
      expect(issued).toMatch(/^pst_/);
      // Every instance reloads issued tokens within TOKEN_REFRESH_MS (5 s).
      const readWithIssued = `${service.url}/plants/9007199254740993`;
      expect(await statusWithin(readWithIssued, issued, 200)).toBe(200);
      const listed = await runShipped(`${PNPM} --filter @plant-store/api admin token list`, { cwd: clone });
      expect(listed.code, listed.stderr).toBe(0);
      expect(listed.stdout).toMatch(
        /\{"name":"reporting","scopes":\["read"\],"createdAt":"[^"]+","revokedAt":null\}/,
      );
      const revoked = await runShipped(
        `${PNPM} --filter @plant-store/api admin token revoke --name reporting`,
        {
          cwd: clone,
        },
      );
      expect(revoked.code, revoked.stderr).toBe(0);
      expect(await statusWithin(readWithIssued, issued, 401)).toBe(401);

      await service.stop('SIGINT');
      expect(
        service.logs.some((entry) => entry.msg === 'stopped'),
        service.output.join('\n'),
      ).toBe(true);
    } finally {
      if (service.alive()) await service.stop('SIGTERM');
    }
  }, 900_000);
});

/**
 * GETs `url` with `token` until it answers `expected` (or 12 s pass); resolves with the last status.
 * Every 500 ms: an unknown token counts against the failed-authentication budget (30 a minute).
 */
async function statusWithin(url: string, token: string, expected: number): Promise<number> {
  let status = 0;
  for (let i = 0; i < 24 && status !== expected; i++) {
    if (i > 0) await sleep(500);
    const answer = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
    status = answer.status;
    await answer.text();
  }
  return status;
}
