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
  {
    version: 2,
    name: 'create webhook deliveries',
    // The webhook outbox (see DeliveryOutbox in store.ts). `id` is the `webhook-id`; `payload` is
    // TEXT, not JSONB, so every attempt sends (and signs) the same bytes. While an attempt runs,
    // `next_attempt_at` is its lease's end: a claim pushes it forward, so one due-index serves both.
    sql: `
      CREATE TABLE webhook_deliveries (
        id TEXT PRIMARY KEY,
        url TEXT NOT NULL,
        payload TEXT NOT NULL,
        status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
        attempts INTEGER NOT NULL DEFAULT 0,
        next_attempt_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        last_error TEXT,
        created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
      );
      CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
      CREATE INDEX webhook_deliveries_failed ON webhook_deliveries (created_at) WHERE status = 'failed';
    `,
  },
  {
    version: 3,
    name: 'create api tokens',
    // Issued bearer tokens, as in sqlite-migrations.ts: the secret's SHA-256 digest only.
    sql: `
      CREATE TABLE api_tokens (
        name TEXT PRIMARY KEY,
        digest TEXT NOT NULL UNIQUE,
        scopes TEXT NOT NULL,
        created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        revoked_at TIMESTAMPTZ
      )
    `,
  },
];
