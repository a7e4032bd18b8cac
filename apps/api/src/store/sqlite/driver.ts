import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';

/**
 * better-sqlite3 12 aborts Node 24 at exit or in GC (`(env) != nullptr`, node::ObjectWrap); 13, on
 * Node-API, does not but needs Node 22. Same API and types (docs/architecture.md).
 */
export const SQLITE_DRIVER =
  Number(process.versions.node.split('.')[0]) >= 22 ? 'better-sqlite3-13' : 'better-sqlite3';

export const Database: typeof BetterSqlite3 = createRequire(import.meta.url)(SQLITE_DRIVER);
