import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const LOG_MODULE = fileURLToPath(new URL('../../src/observability/log.ts', import.meta.url));

describe('loggers on stdout', () => {
  it('count the lines each of them dropped apart: two loggers in one process share no counter', async () => {
    // Two stdout loggers in a process whose stdout nobody reads: the first writes 12 MB (past its
    // 8 MiB buffer), the second nothing; then the process reports both counts on stderr.
    const script = `
      import { createLogger, droppedLogLines } from ${JSON.stringify(LOG_MODULE)};
      const config = { logLevel: 'info', production: true };
      const first = createLogger(config);
      const second = createLogger(config);
      const line = 'x'.repeat(4000);
      for (let i = 0; i < 3000; i++) first.info({ line }, 'filler');
      setTimeout(() => {
        process.stderr.write(JSON.stringify({ first: droppedLogLines(first), second: droppedLogLines(second) }) + '\\n');
      }, 100);
    `;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: fileURLToPath(new URL('../..', import.meta.url)),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    try {
      while (!stderr.includes('\n')) await once(child.stderr, 'data');
      const counts = JSON.parse(stderr) as { first: number; second: number };
      expect(counts.first).toBeGreaterThan(0);
      expect(counts.second).toBe(0);
    } finally {
      // Its stdout is full: it could not flush its way out.
      child.kill('SIGKILL');
    }
  });
});
