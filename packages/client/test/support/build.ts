import { execFileSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const PACKAGE = new URL('../../', import.meta.url).pathname;
/** What dist/ is built from: this package, the schema it bundles, the api whose router types it ships. */
const INPUTS = ['src', 'build.mjs', 'package.json', '../schema/src', '../../apps/api/src'];

/**
 * Vitest global setup: the CLI and pack tests use the built package, so build it when dist/ is
 * missing or older than its inputs (under turbo, `build` has already run: nothing to do).
 */
export default function buildIfStale(): void {
  const built = oldest(join(PACKAGE, 'dist'));
  const changed = Math.max(...INPUTS.map((input) => newest(join(PACKAGE, input))));
  if (built !== undefined && built >= changed) return;
  execFileSync(process.execPath, ['build.mjs'], { cwd: PACKAGE, stdio: 'inherit' });
}

function files(path: string): string[] {
  try {
    if (!statSync(path).isDirectory()) return [path];
  } catch {
    return [];
  }
  return readdirSync(path, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name));
}

function newest(path: string): number {
  return Math.max(0, ...files(path).map((file) => statSync(file).mtimeMs));
}

function oldest(path: string): number | undefined {
  const times = files(path).map((file) => statSync(file).mtimeMs);
  return times.length === 0 ? undefined : Math.min(...times);
}
