// The vitest projects every package shares: each test file sits where its name says what it needs
// (docs/testing.md). Node builtins only: every package's vitest.config.ts imports this file.
import { readdirSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The projects, from the cheapest to the costliest, and what each needs besides the source. */
export const PROJECTS = {
  unit: 'nothing: no sockets, no files, no processes',
  'in-process': 'sockets, stores (SQLite, PostgreSQL, Redis), files and child processes, but no build',
  built: 'the build (`dist/`): the api as `pnpm start` runs it, the packed client, the `plants` bin',
  shipped: 'a fresh clone or `pnpm start`, and the network (npx fetches pnpm)',
  browser: 'Chromium (/usr/bin/chromium)',
} as const;

export type ProjectName = keyof typeof PROJECTS;

/**
 * Files run side by side, one more than the cores (vitest's default on 2 cores is one): most tests
 * wait on sockets, timers and child processes. With three on CI's 2 cores both stay busy.
 */
const WORKERS = availableParallelism() + 1;

/**
 * How each project runs: groups one after another, cheapest first (a broken unit fails fast). The
 * shipped and browser projects come last, two files at a time and beside nothing else: each starts
 * `pnpm start`, a fresh clone or Chromium, and times signals and shutdowns, but most of their time is
 * spent waiting (the README's test keeps the service up for a minute), which the other file uses.
 * `isolate: false` reuses a worker's module graph from one file to the next instead of importing
 * the api afresh for each (a third of the CPU time of unit, in-process and built): every test file
 * here starts its own servers and stores and must leave no module state behind.
 */
const RUN: Record<ProjectName, { groupOrder: number; maxWorkers: number; isolate: boolean }> = {
  unit: { groupOrder: 0, maxWorkers: WORKERS, isolate: false },
  'in-process': { groupOrder: 0, maxWorkers: WORKERS, isolate: false },
  built: { groupOrder: 1, maxWorkers: WORKERS, isolate: false },
  shipped: { groupOrder: 2, maxWorkers: 2, isolate: true },
  browser: { groupOrder: 2, maxWorkers: 2, isolate: true },
};

/** Tests beside the code they test (`src/`, `scripts/`) are unit tests; the rest sit in `test/<project>/`. */
const BESIDE_THE_CODE = /^(src|scripts)\//;

/**
 * The project a test file belongs to (`file` relative to its package, with `/`), or undefined
 * when it sits where no project looks.
 */
export function projectOf(file: string): ProjectName | undefined {
  if (BESIDE_THE_CODE.test(file)) return 'unit';
  const name = /^test\/([^/]+)\/.+/.exec(file)?.[1];
  return name !== undefined && Object.hasOwn(PROJECTS, name) ? (name as ProjectName) : undefined;
}

/** The test files in `files` that belong to no project, with what to do about it. */
export function strayTestsMessage(files: readonly string[]): string | undefined {
  const stray = files.filter((file) => projectOf(file) === undefined);
  if (stray.length === 0) return undefined;
  return (
    `${stray.length === 1 ? 'This test file belongs' : 'These test files belong'} to no vitest project: ` +
    `${stray.join(', ')}. Put each in test/<project>/ for the project that says what it needs ` +
    `(${Object.entries(PROJECTS)
      .map(([name, needs]) => `${name}: ${needs}`)
      .join('; ')}), or beside its code in src/ when it is a unit test (docs/testing.md).`
  );
}

/**
 * `test.projects` for the package whose vitest.config.ts is at `configUrl`: one project for each
 * of `PROJECTS` the package has tests of, each project's `overrides` merged into its `test`.
 * Throws when a test file of the package belongs to no project, so a new test is classified or
 * nothing runs.
 */
export function testProjects(configUrl: string, overrides: Partial<Record<ProjectName, object>> = {}) {
  const root = fileURLToPath(new URL('.', configUrl));
  const files = testFiles(root).map((file) => relative(root, file).split(sep).join('/'));
  const stray = strayTestsMessage(files);
  if (stray !== undefined) throw new Error(stray);
  const present = new Set(files.map(projectOf));
  return (Object.keys(PROJECTS) as ProjectName[])
    .filter((name) => present.has(name))
    .map((name) => ({
      extends: true as const,
      test: {
        name,
        include:
          name === 'unit'
            ? ['src/**/*.test.ts', 'scripts/**/*.test.ts', 'test/unit/**/*.test.ts']
            : [`test/${name}/**/*.test.ts`],
        sequence: { groupOrder: RUN[name].groupOrder },
        maxWorkers: RUN[name].maxWorkers,
        isolate: RUN[name].isolate,
        ...overrides[name],
      },
    }));
}

/** Every `*.test.ts` under `dir`, but none in node_modules, dist/ or hidden folders. */
function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return SKIPPED.test(entry.name) ? [] : testFiles(path);
    return entry.isFile() && entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

const SKIPPED = /^(node_modules|dist|\..*)$/;
