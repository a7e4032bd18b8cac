// Bundles the api and its workspace packages into dist/main.js; npm dependencies stay external.
import { copyFileSync, readFileSync } from 'node:fs';
import { build } from 'esbuild';

const { dependencies } = JSON.parse(readFileSync(new URL('./package.json', import.meta.url), 'utf8'));
await build({
  entryPoints: ['src/main.ts'],
  outfile: 'dist/main.js',
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  sourcemap: true,
  external: Object.keys(dependencies).filter((name) => !name.startsWith('@plant-store/')),
  logLevel: 'warning',
});
// The SQLite writer thread is plain JavaScript loaded by URL next to main.js.
copyFileSync('src/store/sqlite-writer.mjs', 'dist/sqlite-writer.mjs');
