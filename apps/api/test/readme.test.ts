import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { describe, expect, it } from 'vitest';

const ROOT = new URL('../../../', import.meta.url).pathname;

/** The README's numbered commands, in order, as a newcomer would copy them. */
function readmeCommands(): string[] {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const block = /```sh\n([\s\S]*?)```/.exec(readme)![1]!;
  return block.split('\n').filter((line) => line.trim() !== '' && !line.startsWith('#'));
}

describe("the README's first command", () => {
  it('starts an authenticated service on the embedded store in a fresh clone', async () => {
    const [startCommand] = readmeCommands();
    expect(startCommand).toMatch(/ start$/);
    const clone = mkdtempSync(join(tmpdir(), 'plant-store-clone-'));
    execFileSync('git', ['clone', '--quiet', '--depth', '1', `file://${ROOT}`, clone]);
    // Only PORT differs from a newcomer's run (a free port, so it never clashes with a running api).
    const { API_TOKENS: _tokens, DATABASE_URL: _url, ...inherited } = process.env;
    const env = { ...inherited, PORT: '0' };
    const child = spawn('bash', ['-c', startCommand!], {
      cwd: clone,
      env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let output = '';
        const onLine = (line: string) => {
          output += `${line}\n`;
          const at = line.indexOf('{"level"');
          if (at >= 0 && line.includes('"msg":"listening"')) resolve(JSON.parse(line.slice(at)).url);
        };
        createInterface({ input: child.stdout! }).on('line', onLine);
        createInterface({ input: child.stderr! }).on('line', onLine);
        child.once('exit', (code) => reject(new Error(`exited with ${code}:\n${output}`)));
      });
      const token = readFileSync(join(clone, 'apps/api/data/api-token'), 'utf8').trim();
      expect(token.length).toBeGreaterThanOrEqual(32);
      const answer = await fetch(`${url}/plants`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: '{"id":9007199254740993,"name":"Monstera","tag":"aroid"}',
      });
      expect(answer.status).toBe(200);
      expect(await answer.text()).toBe('{"name":"Monstera","tag":"aroid"}');
      const unauthenticated = await fetch(`${url}/plants`, { method: 'POST', body: '{}' });
      expect(unauthenticated.status).toBe(401);
    } finally {
      try {
        process.kill(-child.pid!, 'SIGTERM');
      } catch {
        // already gone
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
      rmSync(clone, { recursive: true, force: true });
    }
  }, 600_000);
});
