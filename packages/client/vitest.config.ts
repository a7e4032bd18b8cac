import { defineConfig } from 'vitest/config';
import { testProjects } from '../../vitest.projects.ts';

export default defineConfig({
  test: {
    // The built tests run the built CLI and package: build them first when stale.
    projects: testProjects(import.meta.url, { built: { globalSetup: ['test/support/build.ts'] } }),
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
