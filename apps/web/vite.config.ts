import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';
import { bundleBudget } from './scripts/bundle-budget.ts';

/** The api `pnpm dev` proxies /trpc to (apps/api's `dev`, on its default port). */
const API_URL = process.env.PLANTS_API_URL ?? 'http://127.0.0.1:3000';

export default defineConfig({
  // Relative URLs: the api serves the build under /app/ (apps/api/src/http/web-app.ts), and the
  // page keeps working behind a proxy that adds a path prefix.
  base: './',
  plugins: [react(), bundleBudget()],
  build: {
    // Source maps for the browser's developer tools; the budget counts only the scripts.
    sourcemap: true,
  },
  server: {
    // Same origin in development too: the console calls /trpc of the server that served it.
    proxy: { '/trpc': { target: API_URL } },
  },
});
