/**
 * PostgreSQL schema versions, applied in order at start-up (and by the `migrate` command), each in
 * its own transaction. Never edit a released one: add the next. Keep to SQL that PostgreSQL-compatible
 * distributed engines (CockroachDB, YugabyteDB) also run: plain types, no extensions, no triggers.
 */
export const postgresMigrations = [
  {
    version: 1,
    name: 'create plants',
    // BIGINT is int8: the full signed 64-bit range of PlantId. The primary key is the only index.
    sql: 'CREATE TABLE plants (id BIGINT PRIMARY KEY, name TEXT NOT NULL, tag TEXT)',
  },
];
