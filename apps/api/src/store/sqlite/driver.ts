import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';

/**
 * The better-sqlite3 for the Node line this process runs on, by package name. 12 is built on
 * node::ObjectWrap, whose Node 24 headers remove a cleanup hook from the environment when a
 * database or statement object is destroyed: at a worker's or the process's exit, or in a GC
 * finalizer, that environment is gone and Node aborts (`Assertion failed: (env) != nullptr`).
 * 13 is built on Node-API (prebuilt, nothing to compile) and does not abort, but needs Node 22 and
 * crashes on Node 20. Both have the same JavaScript API and types (docs/architecture.md).
 */
export const SQLITE_DRIVER =
  Number(process.versions.node.split('.')[0]) >= 22 ? 'better-sqlite3-13' : 'better-sqlite3';

/** better-sqlite3's `Database` class, from `SQLITE_DRIVER`. */
export const Database: typeof BetterSqlite3 = createRequire(import.meta.url)(SQLITE_DRIVER);
