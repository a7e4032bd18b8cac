import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const DIST = new URL('../../dist/', import.meta.url).pathname;

/** Every module a file of the bundle imports at run time: `import("./chunks/…")`. */
function lazyImports(): string[] {
  const files = ['main.js', ...readdirSync(join(DIST, 'chunks')).map((name) => `chunks/${name}`)];
  const found = new Set<string>();
  for (const file of files.filter((name) => name.endsWith('.js'))) {
    const text = readFileSync(join(DIST, file), 'utf8');
    for (const [, specifier] of text.matchAll(/import\("(\.[^"]+)"\)/g)) {
      found.add(join(file.includes('/') ? 'chunks' : '', specifier!));
    }
  }
  return [...found].sort();
}

/**
 * Lazily loaded chunks are where a bundle breaks silently: they load only in the configuration
 * that needs them (PostgreSQL, Redis, the OpenAPI document). Each must load from dist/ in a plain
 * Node process and export what its importer uses; the shipped layer (shipped.test.ts) then runs
 * each configuration end to end.
 */
describe('the bundle in dist/', () => {
  it('loads every lazily imported chunk in a plain Node process', async () => {
    const chunks = lazyImports();
    // The PostgreSQL store (store/postgres/store.ts), the Redis client (http/rate-limit-redis.ts),
    // the OpenAPI document and the tracing SDK, at least: a chunk is named after its entry file.
    for (const name of ['store', 'rate-limit-redis', 'openapi', 'sdk']) {
      expect(
        chunks.some((chunk) => chunk.startsWith(`chunks/${name}-`)),
        name,
      ).toBe(true);
    }
    for (const chunk of chunks) {
      const { stdout } = await promisify(execFile)(process.execPath, [
        '--input-type=module',
        '-e',
        `const m = await import(${JSON.stringify(join(DIST, chunk))});
         console.log(JSON.stringify(Object.entries(m).map(([k, v]) => [k, typeof v])));`,
      ]);
      const exports = JSON.parse(stdout) as [string, string][];
      expect(exports.length, chunk).toBeGreaterThan(0);
      expect(
        exports.every(([, type]) => type !== 'undefined'),
        `${chunk}: ${stdout}`,
      ).toBe(true);
    }
  });

  it('constructs the Redis client from its chunk (what REDIS_URL runs)', async () => {
    const redis = lazyImports().find((chunk) => chunk.startsWith('chunks/rate-limit-redis-'))!;
    const { stdout } = await promisify(execFile)(process.execPath, [
      '--input-type=module',
      '-e',
      `const m = await import(${JSON.stringify(join(DIST, redis))});
       const connect = Object.values(m).find((v) => typeof v === 'function');
       const log = { warn() {}, info() {} };
       const client = connect('redis://127.0.0.1:1', { timeoutMs: 100, log });
       console.log(typeof client.get, typeof client.evalsha, typeof client.status);
       client.disconnect();`,
    ]);
    expect(stdout.trim()).toBe('function function string');
  });

  it('keeps the OpenTelemetry SDK out of main.js: a service without an endpoint never loads it', () => {
    const sdk = lazyImports().find((chunk) => chunk.startsWith('chunks/sdk-'))!;
    // The exporters' content types, and the batch processor's warning, are only in the SDK.
    for (const text of ['application/x-protobuf', 'maxExportBatchSize must be smaller']) {
      expect(readFileSync(join(DIST, sdk), 'utf8'), text).toContain(text);
      expect(readFileSync(join(DIST, 'main.js'), 'utf8'), text).not.toContain(text);
    }
  });
});
