/** SQLite schema versions, applied in order at start-up. Never edit a released one: add the next. */
export const sqliteMigrations = [
  {
    version: 1,
    name: 'create plants',
    // INTEGER PRIMARY KEY makes id the rowid: one B-tree, signed 64-bit, no separate index.
    sql: 'CREATE TABLE plants (id INTEGER PRIMARY KEY, name TEXT NOT NULL, tag TEXT)',
  },
];
