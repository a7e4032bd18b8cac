import { afterAll, describe, expect, it } from 'vitest';
import { rowBuilder } from '../../src/store/sqlite/connection.ts';
import { Database } from '../../src/store/sqlite/driver.ts';

/**
 * The SQLite store reads rows as better-sqlite3's `raw()` arrays, made objects by `rowBuilder` from
 * the names `columns()` gives, instead of better-sqlite3's own row objects. It goes around the
 * library because that earned a 100-plant page more than the 20% the rule asks ("Going around a
 * library", docs/architecture.md). When an upgrade of better-sqlite3 changes what `raw()` or
 * `columns()` give, this fails: make rowBuilder follow, or go back to the library's objects.
 */
const RULE =
  "better-sqlite3's raw() or columns() no longer give what its row objects hold: fix rowBuilder (store/sqlite/connection.ts) or go back to .all() objects (docs/architecture.md, Going around a library)";

describe('rowBuilder, over better-sqlite3 raw() and columns()', () => {
  const db = new Database(':memory:');
  db.defaultSafeIntegers(true);
  db.exec(`CREATE TABLE plants (id INTEGER PRIMARY KEY, name TEXT NOT NULL, tag TEXT, version INTEGER NOT NULL);
    INSERT INTO plants VALUES (1, 'Fern', 'green', 1), (9223372036854775807, 'Moss', NULL, 2), (-5, '"q"', '', 3)`);
  afterAll(() => db.close());

  const statements = [
    'SELECT id, name, tag, version FROM plants ORDER BY id',
    'SELECT version, tag AS label, id FROM plants WHERE id > ? ORDER BY id DESC',
    'SELECT count(*) AS n, max(id) AS top FROM plants',
    'SELECT * FROM plants WHERE id = ?',
  ];

  it.each(statements)('gives the rows .all() gives, keys in order: %s', (sql) => {
    const params = sql.includes('?') ? [sql.includes('=') ? 1n : -10n] : [];
    const expected = db.prepare(sql).all(...params);
    const raw = db.prepare(sql).raw(true);
    const row = rowBuilder<object>(raw.columns().map(({ name }) => name));
    const rows = (raw.all(...params) as unknown[][]).map(row);
    expect(rows, RULE).toStrictEqual(expected);
    expect(rows.map((r) => Object.keys(r)), RULE).toEqual(expected.map((r) => Object.keys(r as object)));
    expect([...(raw.iterate(...params) as Iterable<unknown[]>)].map(row), RULE).toStrictEqual(expected);
  });
});
