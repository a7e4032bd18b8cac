import { gzipSync } from 'node:zlib';
import type { Plugin } from 'vite';

/** The most JavaScript the console may ship, gzip-compressed (issue 25): 150 kB, in bytes. */
export const JS_BUDGET_GZIP_BYTES = 150_000;

export type ScriptSize = { file: string; bytes: number; gzipBytes: number };

/** Sizes of the scripts, gzip-compressed as the api serves them (zlib's default level). */
export function measureScripts(scripts: readonly { file: string; code: string }[]): ScriptSize[] {
  return scripts.map(({ file, code }) => ({
    file,
    bytes: Buffer.byteLength(code),
    gzipBytes: gzipSync(code).length,
  }));
}

/** One line for the build's output, and whether the total is within `budget`. */
export function judgeBudget(sizes: readonly ScriptSize[], budget = JS_BUDGET_GZIP_BYTES) {
  const total = sizes.reduce((sum, size) => sum + size.gzipBytes, 0);
  const kb = (bytes: number) => `${(bytes / 1000).toFixed(1)} kB`;
  const files = sizes.map((size) => `${size.file} ${kb(size.gzipBytes)}`).join(', ');
  return {
    total,
    ok: total <= budget,
    report: `JavaScript: ${kb(total)} gzip of a ${kb(budget)} budget (${files})`,
  };
}

/**
 * Reports the gzip size of every script the build emits and fails the build above the budget,
 * so CI (which builds before it tests) fails too.
 */
export function bundleBudget(budget = JS_BUDGET_GZIP_BYTES): Plugin {
  return {
    name: 'plant-store:bundle-budget',
    apply: 'build',
    generateBundle(_options, bundle) {
      const scripts = Object.values(bundle).flatMap((output) =>
        output.type === 'chunk' ? [{ file: output.fileName, code: output.code }] : [],
      );
      const { ok, report } = judgeBudget(measureScripts(scripts), budget);
      if (!ok) this.error(`over budget: ${report}`);
      this.info(report);
    },
  };
}
