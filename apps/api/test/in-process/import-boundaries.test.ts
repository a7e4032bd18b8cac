/**
 * What may import what, read from the sources as the compiler reads them (type-only imports,
 * re-exports and dynamic imports included, as `madge --circular` counts them): the store knows
 * nothing of tracing, webhooks or the requests it serves (it is handed what it must record), and no
 * module of the api or the packages imports itself back through others.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../../..');
const API = join(ROOT, 'apps/api/src');

/** Every .ts file under `dir`, absolute. */
function sources(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts'))
    .map((file) => join(dir, file));
}

/** The files `file` imports from its own package (relative specifiers), absolute. */
function imports(file: string): string[] {
  const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
  return importedFiles
    .map(({ fileName }) => fileName)
    .filter((name) => name.startsWith('.'))
    .map((name) => resolve(dirname(file), name));
}

/** Each import cycle among `files`, as the files it passes through (relative to `base`), once. */
function cycles(files: string[], base: string): string[][] {
  const graph = new Map(files.map((file) => [file, imports(file).filter((to) => files.includes(to))]));
  const found = new Map<string, string[]>();
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (file: string): void => {
    state.set(file, 'open');
    path.push(file);
    for (const next of graph.get(file)!) {
      if (state.get(next) === 'open') {
        const cycle = path.slice(path.indexOf(next)).map((f) => relative(base, f));
        found.set([...cycle].sort().join(' '), cycle);
      } else if (!state.has(next)) visit(next);
    }
    path.pop();
    state.set(file, 'done');
  };
  for (const file of files) if (!state.has(file)) visit(file);
  return [...found.values()];
}

/** What the store must not import: the concepts that use it. */
const ABOVE_THE_STORE = ['tracing', 'webhooks', 'operations', 'events', 'http', 'trpc', 'admin'];

describe('import boundaries', () => {
  it('keeps the store free of tracing, webhooks and what serves requests', () => {
    const store = sources(join(API, 'store'));
    expect(store.length).toBeGreaterThan(10);
    const crossing = store.flatMap((file) =>
      imports(file)
        .filter((to) => ABOVE_THE_STORE.some((concept) => to.startsWith(`${join(API, concept)}/`)))
        .map((to) => `${relative(API, file)} imports ${relative(API, to)}`),
    );
    expect(crossing).toStrictEqual([]);
  });

  it.each(['apps/api/src', 'packages/schema/src', 'packages/client/src'])(
    'finds no import cycle in %s',
    (dir) => {
      const files = sources(join(ROOT, dir));
      expect(cycles(files, join(ROOT, dir))).toStrictEqual([]);
    },
  );

  it('counts type-only imports and re-exports, as madge does, and names the files of a cycle', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cycles-'));
    try {
      writeFileSync(join(dir, 'a.ts'), "import type { B } from './b.ts';\nexport type A = B;\n");
      writeFileSync(join(dir, 'b.ts'), "export { c as B } from './c.ts';\n");
      writeFileSync(join(dir, 'c.ts'), "import type { A } from './a.ts';\nexport type c = A | 1;\n");
      writeFileSync(join(dir, 'd.ts'), "import type { A } from './a.ts';\nexport type D = A;\n");
      expect(cycles(sources(dir), dir)).toStrictEqual([['a.ts', 'b.ts', 'c.ts']]);
    } finally {
      rmSync(dir, { recursive: true });
    }
  });
});
