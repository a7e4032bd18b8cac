import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { Database, SQLITE_DRIVER } from '../../src/store/sqlite/driver.ts';

const NODE_MAJOR = Number(process.versions.node.split('.')[0]);
/** The file the driver loads: its folder names the package and version pnpm installed. */
const DRIVER_FILE = createRequire(new URL('../../src/store/sqlite/driver.ts', import.meta.url)).resolve(
  SQLITE_DRIVER,
);

describe('the SQLite driver for this Node line (src/store/sqlite/driver.ts)', () => {
  it(`is better-sqlite3 ${NODE_MAJOR >= 22 ? 13 : 12} on Node ${NODE_MAJOR}`, () => {
    expect(DRIVER_FILE).toContain(NODE_MAJOR >= 22 ? '/better-sqlite3@13.' : '/better-sqlite3@12.');
    const db = new Database(':memory:');
    expect(db.prepare('SELECT sqlite_version() >= ? AS recent').get('3.45')).toEqual({ recent: 1 });
    db.close();
  });

  it('does not abort the process when workers end with databases, statements and iterators unclosed', async () => {
    // better-sqlite3 12 on Node 24: `Assertion failed: (env) != nullptr` and exit 134, most runs.
    const worker = `
      const Database = require(${JSON.stringify(DRIVER_FILE)});
      for (let i = 0; i < 2000; i++) {
        const db = new Database(':memory:');
        for (const row of db.prepare('SELECT 1 AS one').iterate()) void row;
        if (i % 3 === 0) db.close();
      }
      require('node:worker_threads').parentPort.postMessage('ready');
      setInterval(() => {}, 1000);`;
    const script = `
      const { Worker } = require('node:worker_threads');
      (async () => {
        for (let i = 0; i < 5; i++) {
          const worker = new Worker(${JSON.stringify(worker)}, { eval: true });
          await new Promise((resolve) => worker.once('message', resolve));
          await worker.terminate();
        }
        process.stdout.write('five workers ended');
      })();`;
    const { stdout, stderr } = await promisify(execFile)(process.execPath, ['-e', script]);
    expect(stdout).toBe('five workers ended');
    expect(stderr).toBe('');
  });
});
