/**
 * The configuration pages say what `config.ts` reads: docs/configuration.md lists every variable
 * with its default, and the README's short table names only real variables.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { EnvSchema } from '../../src/config/env.ts';

const ROOT = new URL('../../../../', import.meta.url);

/** `| \`NAME\`[, \`NAME\`…] | default | …` rows of a Markdown file: each name with its default cell. */
function documented(file: string): Map<string, string> {
  const rows = new Map<string, string>();
  for (const line of readFileSync(new URL(file, ROOT), 'utf8').split('\n')) {
    const cells = line.split('|').map((cell) => cell.trim());
    if (!/^`[A-Z_]+`(, `[A-Z_]+`)*$/.test(cells[1] ?? '')) continue;
    const names = cells[1]!.split(', ').map((name) => name.slice(1, -1));
    const defaults = cells[2]!.split(', ');
    for (const [i, name] of names.entries())
      rows.set(name, defaults.length === names.length ? defaults[i]! : cells[2]!);
  }
  return rows;
}

/** The default as the docs write it: the value in backticks, or "unset" when there is none. */
function schemaDefault(name: string): string {
  const parsed = EnvSchema.shape[name as keyof typeof EnvSchema.shape].safeParse(undefined);
  expect(parsed.success, name).toBe(true);
  const value = parsed.data as unknown;
  return value === undefined || (Array.isArray(value) && value.length === 0)
    ? 'unset'
    : `\`${String(value)}\``;
}

const variables = Object.keys(EnvSchema.shape);
const NO_DEFAULT = ['unset', 'generated', '—'];

describe('docs/configuration.md', () => {
  const rows = documented('docs/configuration.md');

  it.each(variables)('lists %s with the default config.ts gives it', (name) => {
    expect(rows.has(name), `${name} is not in docs/configuration.md`).toBe(true);
    const expected = schemaDefault(name);
    const written = rows.get(name)!;
    if (expected === 'unset') expect(NO_DEFAULT, name).toContain(written);
    else expect(written, name).toBe(expected);
  });

  it('lists no variable that config.ts does not read', () => {
    expect([...rows.keys()].filter((name) => !variables.includes(name))).toEqual([]);
  });
});

describe("the README's configuration table", () => {
  it('names only variables config.ts reads, with their defaults', () => {
    const rows = documented('README.md');
    expect(rows.size).toBeGreaterThan(5);
    for (const [name, written] of rows) {
      expect(variables, name).toContain(name);
      const expected = schemaDefault(name);
      if (expected === 'unset') expect(NO_DEFAULT, name).toContain(written);
      else expect(written, name).toBe(expected);
    }
  });
});
