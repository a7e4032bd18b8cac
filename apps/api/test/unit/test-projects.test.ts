import { describe, expect, it } from 'vitest';
import { projectOf, strayTestsMessage } from '../../../../vitest.projects.ts';

describe('the vitest projects (vitest.projects.ts)', () => {
  it('puts tests beside their code in unit, and each test/<project>/ file in its project', () => {
    expect(projectOf('src/auth.test.ts')).toBe('unit');
    expect(projectOf('src/webhooks/ssrf.test.ts')).toBe('unit');
    expect(projectOf('scripts/bundle-budget.test.ts')).toBe('unit');
    expect(projectOf('test/unit/configuration-docs.test.ts')).toBe('unit');
    expect(projectOf('test/in-process/http-read.test.ts')).toBe('in-process');
    expect(projectOf('test/built/deep/smoke.test.ts')).toBe('built');
    expect(projectOf('test/shipped/readme.test.ts')).toBe('shipped');
    expect(projectOf('test/browser/docs-browser.test.ts')).toBe('browser');
  });

  it('finds no project for a test file outside those folders', () => {
    expect(projectOf('test/smoke.test.ts')).toBeUndefined();
    expect(projectOf('test/support/http.test.ts')).toBeUndefined();
    expect(projectOf('test/e2e/smoke.test.ts')).toBeUndefined();
    expect(projectOf('bin/plants.test.ts')).toBeUndefined();
  });

  it('names every stray file and says where tests go, so a run fails with what to do', () => {
    expect(strayTestsMessage(['src/auth.test.ts', 'test/in-process/cors.test.ts'])).toBeUndefined();
    expect(strayTestsMessage(['test/etag.test.ts', 'src/auth.test.ts', 'test/e2e/x.test.ts'])).toBe(
      'These test files belong to no vitest project: test/etag.test.ts, test/e2e/x.test.ts. Put each in ' +
        'test/<project>/ for the project that says what it needs (unit: nothing: no sockets, no files, ' +
        'no processes; in-process: sockets, stores (SQLite, PostgreSQL, Redis), files and child processes, ' +
        'but no build; built: the build (`dist/`): the api as `pnpm start` runs it, the packed client, ' +
        'the `plants` bin; shipped: a fresh clone or `pnpm start`, and the network (npx fetches pnpm); ' +
        'browser: Chromium (/usr/bin/chromium)), or beside its code in src/ when it is a unit test ' +
        '(docs/testing.md).',
    );
  });
});
