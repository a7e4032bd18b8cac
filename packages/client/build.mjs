// Builds the package as it is published: dist/*.js (ESM) and dist/*.d.ts. The private workspace
// packages are inlined, code and types alike, so the tarball needs only its npm dependencies:
// @plant-store/schema's code and types, and the type of the api's tRPC router (AppRouter) with
// the types it is made of. Everything in `dependencies` (and node:*) stays an import.
import { existsSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { builtinModules, createRequire } from 'node:module';
import { build } from 'esbuild';
import { rollup } from 'rollup';
import { dts } from 'rollup-plugin-dts';

const { dependencies } = JSON.parse(readFileSync('package.json', 'utf8'));
const imported = [...Object.keys(dependencies), ...builtinModules];
const isExternal = (id) =>
  id.startsWith('node:') || imported.some((name) => id === name || id.startsWith(`${name}/`));

/**
 * Workspace packages by their real paths (Node's resolution), not through node_modules symlinks:
 * TypeScript then names their dependencies' types as they import them (`@trpc/server`), not by a
 * path inside another package's node_modules ("not portable").
 */
const workspaceSources = {
  name: 'workspace-sources',
  resolveId(source, importer) {
    if (source.startsWith('@plant-store/')) {
      return realpathSync(createRequire(importer ?? import.meta.url).resolve(source));
    }
    // The router's procedure metadata is trpc-to-openapi's `OpenApiMeta`: take its declaration file
    // alone, not the package index (which re-exports adapters typed against koa, express, next…).
    if (source === 'trpc-to-openapi') {
      const main = realpathSync(createRequire(importer).resolve(source));
      const types = `${main.slice(0, main.lastIndexOf('/dist/'))}/dist/esm/types.d.ts`;
      if (!existsSync(types)) throw new Error(`${types} is missing: where is OpenApiMeta now?`);
      return types;
    }
    return null;
  },
};

rmSync('dist', { recursive: true, force: true });

await build({
  entryPoints: { index: 'src/index.ts', rest: 'src/rest.ts', cli: 'src/cli.ts' },
  outdir: 'dist',
  bundle: true,
  splitting: true,
  chunkNames: 'chunks/[name]-[hash]',
  format: 'esm',
  platform: 'node',
  target: 'node20',
  external: imported,
  logLevel: 'warning',
});

const types = await rollup({
  input: { index: 'src/index.ts', rest: 'src/rest.ts' },
  // pino: the api's files that AppRouter's types reach (events/hub.ts) import its `Logger` type,
  // which rollup-plugin-dts cannot read from pino's declarations; no type the clients export
  // mentions it, so it is tree-shaken away (the pack test compiles the tarball's types alone).
  external: (id) => isExternal(id) || id === 'pino',
  // respectExternal: inline the types of every import not marked external (the workspace packages
  // and the few types of the api's own dependencies that AppRouter mentions).
  plugins: [workspaceSources, dts({ respectExternal: true, tsconfig: 'tsconfig.json' })],
});
await types.write({ dir: 'dist', format: 'es', chunkFileNames: 'chunks/[name]-[hash].d.ts' });
await types.close();
