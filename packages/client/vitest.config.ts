import { defineConfig } from 'vitest/config';
import { testProjects } from '../../vitest.projects.ts';

export default defineConfig({
  test: {
    // The built tests run the built CLI and package: build them first when stale.
    // The built tests one file at a time: each starts its own api, and pack.test rebuilds dist/
    // (prepack) that cli.test runs.
    projects: testProjects(import.meta.url, { built: { globalSetup: ['test/support/build.ts'], maxWorkers: 1 } }),
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
