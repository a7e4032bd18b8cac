import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { TOKEN } from '../support/http.ts';

const MAIN = new URL('../../dist/main.js', import.meta.url).pathname;

async function start(env: Record<string, string>) {
  try {
    await promisify(execFile)(process.execPath, [MAIN], {
      env: { PATH: process.env.PATH ?? '', ...env },
      timeout: 10_000,
    });
    return { code: 0, stderr: '' };
  } catch (error) {
    const { code, stderr } = error as { code: number; stderr: string };
    return { code, stderr };
  }
}

describe('start-up refuses bad configuration', () => {
  it.each([
    [{ PORT: 'eighty' }, 'PORT'],
    [{ PORT: '70000' }, 'PORT'],
    [{ DATABASE_URL: 'mysql://x' }, 'DATABASE_URL'],
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL'],
    [{ RATE_LIMIT_MAX: '-1' }, 'RATE_LIMIT_MAX'],
    [{ REDIS_URL: 'http://127.0.0.1:6379' }, 'REDIS_URL'],
    [{ CORS_ORIGINS: 'https://app.example/path' }, 'CORS_ORIGINS'],
    [{ WEBHOOK_URLS: 'http://127.0.0.1:9/hook' }, 'WEBHOOK_SECRET'],
    [{ WEBHOOK_URLS: 'ftp://x', WEBHOOK_SECRET: 'whsec_x' }, 'WEBHOOK_URLS'],
    [{ HTTP_HEADERS_TIMEOUT_MS: '0' }, 'HTTP_HEADERS_TIMEOUT_MS'],
    [{ API_TOKENS: 'guessable-token' }, 'API_TOKENS'],
    [{ API_TOKENS: `${TOKEN},secret` }, 'API_TOKENS'],
    [{ REDIS_TIMEOUT_MS: '0' }, 'REDIS_TIMEOUT_MS'],
    [{ AUTH_FAILURE_MAX: 'many' }, 'AUTH_FAILURE_MAX'],
  ])('%o: exits 2 with one line naming %s', async (env, variable) => {
    const { code, stderr } = await start({
      API_TOKENS: TOKEN,
      DATABASE_URL: 'file:/tmp/never-used/plants.db',
      ...env,
    });
    expect(code).toBe(2);
    const lines = stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(variable);
    expect(lines[0]).toMatch(/^Invalid configuration: /);
    // A refused token is a secret all the same: never echoed.
    expect(stderr).not.toMatch(/guessable-token|secret/);
  });

  it('exits 1 with one line when the store cannot be reached', async () => {
    const { code, stderr } = await start({
      API_TOKENS: TOKEN,
      DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none',
      DATABASE_TIMEOUT_MS: '500',
    });
    expect(code).toBe(1);
    expect(stderr.trim().split('\n')).toHaveLength(1);
    expect(stderr).toMatch(/^Could not start: /);
  });

  it('exits 1 with one line when the port is taken', async () => {
    const taken = createServer().listen(0, '127.0.0.1');
    await once(taken, 'listening');
    const dir = mkdtempSync(join(tmpdir(), 'plant-store-port-'));
    try {
      const { code, stderr } = await start({
        API_TOKENS: TOKEN,
        DATABASE_URL: `file:${join(dir, 'plants.db')}`,
        HOST: '127.0.0.1',
        PORT: String((taken.address() as AddressInfo).port),
      });
      expect(code).toBe(1);
      expect(stderr).toBe(
        `Could not start: listen EADDRINUSE: address already in use 127.0.0.1:${(taken.address() as AddressInfo).port}\n`,
      );
    } finally {
      taken.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
