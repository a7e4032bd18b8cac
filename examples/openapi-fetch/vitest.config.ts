import { defineConfig } from 'vitest/config';
import { testProjects } from '../../vitest.projects.ts';

export default defineConfig({
  test: {
    projects: testProjects(import.meta.url),
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
