import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { generatedToken } from '../../src/auth/generated-token.ts';

describe('generatedToken', () => {
  const dirs: string[] = [];
  const fresh = () => {
    const dir = mkdtempSync(join(tmpdir(), 'plant-store-token-'));
    dirs.push(dir);
    return dir;
  };
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it('saves a new token whole, private, with no temporary file left, and reuses it', () => {
    const file = join(fresh(), 'data', 'api-token');
    const token = generatedToken(file);
    expect(token).toMatch(/^pst_[A-Za-z0-9_-]{43}$/);
    expect(readFileSync(file, 'utf8')).toBe(`${token}\n`);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(join(file, '..')).mode & 0o777).toBe(0o700);
    expect(readdirSync(join(file, '..'))).toEqual(['api-token']);
    expect(generatedToken(file)).toBe(token);
  });

  it('keeps a token another process saved, making its file private', () => {
    const file = join(fresh(), 'api-token');
    writeFileSync(file, 'pst_saved-by-another-process\n', { mode: 0o644 });
    expect(generatedToken(file)).toBe('pst_saved-by-another-process');
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  it('refuses a file that holds no usable token (empty, or too short to be one)', () => {
    const file = join(fresh(), 'api-token');
    for (const text of ['', '\n', 'short\n']) {
      writeFileSync(file, text);
      expect(() => generatedToken(file)).toThrow(
        `${file} holds no usable token: delete it to have a new one generated`,
      );
    }
  });
});
