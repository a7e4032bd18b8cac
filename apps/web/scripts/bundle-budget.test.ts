import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { judgeBudget, measureScripts } from './bundle-budget.ts';

// Random base64 text: gzip keeps about three quarters of it (6 bits a character).
const incompressible = (bytes: number) => randomBytes(bytes).toString('base64').slice(0, bytes);

describe('the JavaScript budget', () => {
  it('passes a build within 150 kB gzip and reports the total and each file', () => {
    const sizes = measureScripts([
      { file: 'assets/index-a1.js', code: incompressible(60_000) },
      { file: 'assets/vendor-b2.js', code: 'x'.repeat(500_000) },
    ]);
    const verdict = judgeBudget(sizes);
    expect(verdict.ok).toBe(true);
    expect(verdict.total).toBe(sizes[0]!.gzipBytes + sizes[1]!.gzipBytes);
    expect(verdict.report).toMatch(
      /^JavaScript: \d+\.\d kB gzip of a 150\.0 kB budget \(assets\/index-a1\.js \d+\.\d kB, assets\/vendor-b2\.js \d+\.\d kB\)$/,
    );
  });

  it('fails a build whose scripts add up to more than 150 kB gzip', () => {
    const sizes = measureScripts([
      { file: 'assets/a.js', code: incompressible(110_000) },
      { file: 'assets/b.js', code: incompressible(110_000) },
    ]);
    expect(sizes.every((size) => size.gzipBytes < 150_000)).toBe(true);
    expect(judgeBudget(sizes).ok).toBe(false);
  });
});
