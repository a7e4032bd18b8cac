// Bundles the api into dist/main.js: one file loads much faster than hundreds of modules (cold
// start). Only native addons stay external.
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';

/** The plant console's build (apps/web), which the api serves under /app/ from dist/app. */
const WEB_DIST = '../web/dist';

/**
 * trpc-to-openapi's entry re-exports its HTTP adapters (co-body, h3, iconv-lite, …), which this
 * api never runs: declaring the package free of side effects lets esbuild drop what is unused.
 */
const pureTrpcToOpenapi = {
  name: 'pure-trpc-to-openapi',
  setup(esbuild) {
    esbuild.onResolve({ filter: /.*/ }, async (args) => {
      if (
        args.pluginData === 'pure' ||
        !/(^trpc-to-openapi$|trpc-to-openapi\/dist)/.test(`${args.path} ${args.importer}`)
      )
        return;
      if (args.path !== 'trpc-to-openapi' && !args.path.startsWith('.')) return;
      const result = await esbuild.resolve(args.path, {
        kind: args.kind,
        resolveDir: args.resolveDir,
        importer: args.importer,
        pluginData: 'pure',
      });
      return { ...result, sideEffects: false };
    });
  },
};

await build({
  entryPoints: ['src/main.ts'],
  outdir: 'dist',
  // The PostgreSQL driver and the Redis client are imported dynamically: separate chunks, loaded
  // only by deployments that use them.
  splitting: true,
  chunkNames: 'chunks/[name]-[hash]',
  // Less to parse and compile at start-up (source maps keep stack traces readable).
  minify: true,
  bundle: true,
  platform: 'node',
  // A package's ES module build where it has one (`module`), not only where its `exports` say so.
  // The OpenTelemetry packages (no `exports`) otherwise came in as CommonJS: every use of one of
  // their imports then went through a getter esbuild adds, a lookup V8 cannot cache: by callgrind,
  // the ES module builds took about 4,500 off the 8,000 instructions that tracing configured but
  // unsampled added to a create (docs/tracing.md), and the tracing chunk is a fifth of its size.
  // Only the OpenTelemetry packages change build with this.
  mainFields: ['module', 'main'],
  target: 'node20',
  format: 'esm',
  sourcemap: true,
  external: ['better-sqlite3', 'pg-native'],
  plugins: [pureTrpcToOpenapi],
  // Bundled CommonJS dependencies call require(); give the ESM bundle one.
  banner: {
    js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);",
  },
  metafile: true,
  logLevel: 'warning',
}).then(({ metafile }) => {
  removeStaleChunks(metafile);
  copyWebApp();
  if (!process.env.BUILD_ANALYZE) return;
  const sizes = {};
  for (const [file, { bytesInOutput }] of Object.entries(
    Object.values(metafile.outputs).find((output) => output.entryPoint).inputs,
  )) {
    const name = /node_modules\/\.pnpm\/([^/]+)/.exec(file)?.[1] ?? file;
    sizes[name] = (sizes[name] ?? 0) + bytesInOutput;
  }
  console.table(
    Object.entries(sizes)
      .sort((a, b) => b[1] - a[1])
      .slice(0, 20),
  );
});

/**
 * Chunks of an earlier build must not linger beside the new ones (a test loads every chunk). They
 * are removed after the build, not before: a running api keeps finding the files it loads.
 */
function removeStaleChunks(metafile) {
  const current = new Set(Object.keys(metafile.outputs));
  for (const name of readdirSync('dist/chunks')) {
    const file = join('dist/chunks', name);
    if (!current.has(file)) rmSync(file);
  }
}

/**
 * Puts the console's files in dist/app, so dist/ holds everything the api serves. turbo builds
 * apps/web first (`pnpm build`, `pnpm start`: see turbo.json); built on its own
 * (`pnpm --filter @plant-store/api build`) on a fresh clone, the api builds it here.
 */
function copyWebApp() {
  if (!existsSync(join(WEB_DIST, 'index.html'))) {
    execFileSync('pnpm', ['run', 'build'], { cwd: '../web', stdio: 'inherit' });
  }
  rmSync('dist/app', { recursive: true, force: true });
  cpSync(WEB_DIST, 'dist/app', { recursive: true });
}
