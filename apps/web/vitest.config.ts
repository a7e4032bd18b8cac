import { defineConfig } from 'vitest/config';
import { testProjects } from '../../vitest.projects.ts';

export default defineConfig({
  test: {
    projects: testProjects(import.meta.url),
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
