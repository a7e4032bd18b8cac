/** SQLite schema versions, applied in order at start-up. Never edit a released one: add the next. */
export const sqliteMigrations = [
  {
    version: 1,
    name: 'create plants',
    // INTEGER PRIMARY KEY makes id the rowid: one B-tree, signed 64-bit, no separate index.
    sql: 'CREATE TABLE plants (id INTEGER PRIMARY KEY, name TEXT NOT NULL, tag TEXT)',
  },
  {
    version: 2,
    name: 'create webhook deliveries',
    // The webhook outbox, as in postgres-migrations.ts; times are milliseconds since the epoch.
    // While an attempt runs, `next_attempt_at` is its lease's end.
    sql: `
      CREATE TABLE webhook_deliveries (
        id TEXT PRIMARY KEY,
        url TEXT NOT NULL,
        payload TEXT NOT NULL,
        status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
        attempts INTEGER NOT NULL DEFAULT 0,
        next_attempt_at INTEGER NOT NULL,
        last_error TEXT,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
      );
      CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
      CREATE INDEX webhook_deliveries_failed ON webhook_deliveries (created_at) WHERE status = 'failed';
    `,
  },
  {
    version: 3,
    name: 'create api tokens',
    // Issued bearer tokens: the SHA-256 digest (hex) of the secret, never the secret. Scopes are a
    // comma-separated list; times are milliseconds since the epoch; revoked tokens stay for audit.
    sql: `
      CREATE TABLE api_tokens (
        name TEXT PRIMARY KEY,
        digest TEXT NOT NULL UNIQUE,
        scopes TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        revoked_at INTEGER
      )
    `,
  },
];
