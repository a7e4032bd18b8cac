import type { Dialect } from './sql.ts';

/** SQL for both dialects, or a function of the dialect where the two really differ. */
type Sql = string | ((dialect: Dialect) => string);

export type Migration = { version: number; name: string; up: Sql; down: Sql };

/**
 * A point in time, per dialect: SQLite keeps milliseconds since the epoch (set by the store), and
 * PostgreSQL a TIMESTAMPTZ that defaults to now().
 */
const time = { sqlite: 'INTEGER', postgres: 'TIMESTAMPTZ' } as const;
const stamped = { sqlite: 'INTEGER NOT NULL', postgres: 'TIMESTAMPTZ NOT NULL DEFAULT now()' } as const;
/** The time now, as `time` keeps it. */
const now = { sqlite: "CAST(unixepoch('subsec') * 1000 AS INTEGER)", postgres: 'now()' } as const;
/** The positional names configured tokens had before version 8 (`isLegacyTokenName` in auth.ts). */
const legacyOwner = {
  sqlite: `(owner = 'generated' OR (owner GLOB 'api-token-[1-9]*' AND length(owner) <= 21
            AND substr(owner, 11) NOT GLOB '*[^0-9]*'))`,
  postgres: `(owner = 'generated' OR owner ~ '^api-token-[1-9][0-9]{0,10}$')`,
} as const;

/**
 * The schema versions of both stores, applied in order by `migrate.ts` (at start-up and by the
 * `migrate` command), and reverted in reverse order by `migrate --to N`. Never edit a released one:
 * add the next. Versions and names are what `schema_migrations` records, so they never change.
 * Keep to SQL that PostgreSQL-compatible distributed engines (CockroachDB, YugabyteDB) also run:
 * plain types, no extensions, no triggers.
 */
export const migrations: readonly Migration[] = [
  {
    version: 1,
    name: 'create plants',
    // SQLite: INTEGER PRIMARY KEY makes id the rowid (one B-tree, signed 64-bit, no separate index).
    // PostgreSQL: BIGINT is int8, the full signed 64-bit range of PlantId; the key is the only index.
    up: (dialect) =>
      `CREATE TABLE plants (id ${dialect === 'sqlite' ? 'INTEGER' : 'BIGINT'} PRIMARY KEY, name TEXT NOT NULL, tag TEXT)`,
    down: 'DROP TABLE plants',
  },
  {
    version: 2,
    name: 'create webhook deliveries',
    // The webhook outbox (see deliveries.ts). `id` is the `webhook-id`; `payload` is
    // TEXT, not JSONB, so every attempt sends (and signs) the same bytes. While an attempt runs,
    // `next_attempt_at` is its lease's end: a claim pushes it forward, so one due-index serves both.
    up: (dialect) => `
      CREATE TABLE webhook_deliveries (
        id TEXT PRIMARY KEY,
        url TEXT NOT NULL,
        payload TEXT NOT NULL,
        status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
        attempts INTEGER NOT NULL DEFAULT 0,
        next_attempt_at ${stamped[dialect]},
        last_error TEXT,
        created_at ${stamped[dialect]},
        updated_at ${stamped[dialect]}
      );
      CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
      CREATE INDEX webhook_deliveries_failed ON webhook_deliveries (created_at) WHERE status = 'failed';
    `,
    down: 'DROP TABLE webhook_deliveries',
  },
  {
    version: 3,
    name: 'create api tokens',
    // Issued bearer tokens: the SHA-256 digest (hex) of the secret, never the secret. Scopes are a
    // comma-separated list; revoked tokens stay for audit.
    up: (dialect) => `
      CREATE TABLE api_tokens (
        name TEXT PRIMARY KEY,
        digest TEXT NOT NULL UNIQUE,
        scopes TEXT NOT NULL,
        created_at ${stamped[dialect]},
        revoked_at ${time[dialect]}
      )
    `,
    down: 'DROP TABLE api_tokens',
  },
  {
    version: 4,
    name: 'index webhook deliveries by subscriber',
    // Each subscriber's due deliveries are claimed on their own, so that one subscriber's backlog
    // never stands in front of another's: (url, next_attempt_at) serves the claim, and lets the
    // worker find the subscribers with pending deliveries by a loose index scan; it replaces the
    // due index of version 2. Delivered rows are pruned oldest first, by their own partial index.
    up: `
      CREATE INDEX webhook_deliveries_due_by_url ON webhook_deliveries (url, next_attempt_at) WHERE status = 'pending';
      CREATE INDEX webhook_deliveries_delivered ON webhook_deliveries (updated_at) WHERE status = 'delivered';
      DROP INDEX webhook_deliveries_due;
    `,
    down: `
      CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
      DROP INDEX webhook_deliveries_delivered;
      DROP INDEX webhook_deliveries_due_by_url;
    `,
  },
  {
    version: 5,
    name: 'create plant events',
    // The event log (events.ts): one row per committed create or delete, written in the
    // change's own transaction. `id` only grows: SQLite's AUTOINCREMENT never reuses one, and on
    // PostgreSQL writers take a transaction-scoped advisory lock before they draw one, so ids also
    // commit in order and a reader that has seen id n has seen every committed id below it.
    // `event_log` keeps the greatest id pruned, to tell a resume from a pruned past (410).
    up: (dialect) => `
      CREATE TABLE plant_events (
        id ${dialect === 'sqlite' ? 'INTEGER PRIMARY KEY AUTOINCREMENT' : 'BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY'},
        type TEXT NOT NULL CHECK (type IN ('plant.created', 'plant.deleted')),
        plant_id ${dialect === 'sqlite' ? 'INTEGER' : 'BIGINT'} NOT NULL,
        name TEXT,
        tag TEXT,
        created_at ${stamped[dialect]}
      );
      CREATE INDEX plant_events_created ON plant_events (created_at);
      CREATE TABLE event_log (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        pruned_through ${dialect === 'sqlite' ? 'INTEGER' : 'BIGINT'} NOT NULL
      );
      INSERT INTO event_log (id, pruned_through) VALUES (1, 0);
    `,
    down: `
      DROP TABLE event_log;
      DROP TABLE plant_events;
    `,
  },
  {
    version: 6,
    name: 'create idempotency keys',
    // Idempotency-Key (see idempotency.ts): one row per key and token name. A request claims the
    // key by inserting the row (`claim` is its random id; no `status` yet: in flight), and the
    // transaction that makes its change stores its answer (`status`, `body`) in the row, so the
    // two commit together. Rows are pruned oldest first by `claimed_at`, through its index.
    up: (dialect) => `
      CREATE TABLE idempotency_keys (
        token_name TEXT NOT NULL,
        key TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        claim TEXT NOT NULL,
        claimed_at ${stamped[dialect]},
        status INTEGER,
        body TEXT,
        PRIMARY KEY (token_name, key)
      );
      CREATE INDEX idempotency_keys_claimed ON idempotency_keys (claimed_at);
    `,
    down: 'DROP TABLE idempotency_keys',
  },
  {
    version: 7,
    name: 'create webhook endpoints',
    // Endpoints third parties register (operations/webhook-endpoints.ts), owned by a token's name.
    // `secret` and `previous_secret` hold only sealed secrets (webhooks/secrets.ts); the previous
    // one signs alongside until `previous_secret_expires_at`. A delivery to an endpoint carries its
    // `endpoint_id` (NULL: an operator subscriber of WEBHOOK_URLS) and a copy of its URL; deleting
    // an endpoint deletes its deliveries in the same transaction (no foreign key: a create fanning
    // out to an endpoint being deleted must not fail). Operator and endpoint deliveries are claimed
    // through their own due indexes, so neither kind walks past the other's rows. An endpoint's
    // deliveries are listed newest first by enqueue time, ties broken by id on PostgreSQL (whose
    // times have microseconds) and by rowid, the order of insertion, on SQLite (milliseconds).
    up: (dialect) => `
      CREATE TABLE webhook_endpoints (
        id TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        url TEXT NOT NULL,
        description TEXT,
        secret TEXT NOT NULL,
        previous_secret TEXT,
        previous_secret_expires_at ${time[dialect]},
        created_at ${stamped[dialect]}
      );
      CREATE INDEX webhook_endpoints_owner ON webhook_endpoints (owner, created_at);
      ALTER TABLE webhook_deliveries ADD COLUMN endpoint_id TEXT;
      ALTER TABLE webhook_deliveries ADD COLUMN event TEXT NOT NULL DEFAULT 'plant.created'
        CHECK (event IN ('plant.created', 'webhook.ping'));
      ALTER TABLE webhook_deliveries ADD COLUMN last_response_code INTEGER;
      DROP INDEX webhook_deliveries_due_by_url;
      CREATE INDEX webhook_deliveries_due_by_url ON webhook_deliveries (url, next_attempt_at)
        WHERE status = 'pending' AND endpoint_id IS NULL;
      CREATE INDEX webhook_deliveries_due_by_endpoint ON webhook_deliveries (endpoint_id, next_attempt_at)
        WHERE status = 'pending' AND endpoint_id IS NOT NULL;
      CREATE INDEX webhook_deliveries_by_endpoint ON webhook_deliveries (endpoint_id, created_at${dialect === 'postgres' ? ', id' : ''})
        WHERE endpoint_id IS NOT NULL;
    `,
    down: `
      DELETE FROM webhook_deliveries WHERE endpoint_id IS NOT NULL;
      DROP INDEX webhook_deliveries_by_endpoint;
      DROP INDEX webhook_deliveries_due_by_endpoint;
      DROP INDEX webhook_deliveries_due_by_url;
      CREATE INDEX webhook_deliveries_due_by_url ON webhook_deliveries (url, next_attempt_at) WHERE status = 'pending';
      ALTER TABLE webhook_deliveries DROP COLUMN last_response_code;
      ALTER TABLE webhook_deliveries DROP COLUMN event;
      ALTER TABLE webhook_deliveries DROP COLUMN endpoint_id;
      DROP TABLE webhook_endpoints;
    `,
  },
  {
    version: 8,
    name: 'disable webhook endpoints',
    // An endpoint can be disabled (see EndpointDisabledReason in store.ts): create fans out only to
    // enabled ones, and disabling fails the pending deliveries. Configured tokens were named by
    // position (`api-token-N`, `generated`) and are now named by digest, so what the old names
    // own is disabled here, never handed to whichever token now stands at that position; so are the
    // endpoints of tokens revoked before this version. Reverting deletes the disabled endpoints and
    // their deliveries: version 7 would deliver to them again.
    up: (dialect) => `
      ALTER TABLE webhook_endpoints ADD COLUMN disabled_at ${time[dialect]};
      ALTER TABLE webhook_endpoints ADD COLUMN disabled_reason TEXT
        CHECK (disabled_reason IN ('token_revoked', 'token_inactive', 'token_lacks_read', 'operator', 'legacy_owner'));
      UPDATE webhook_endpoints SET disabled_at = ${now[dialect]}, disabled_reason = 'legacy_owner'
        WHERE ${legacyOwner[dialect]};
      UPDATE webhook_endpoints SET disabled_at = ${now[dialect]}, disabled_reason = 'token_revoked'
        WHERE disabled_at IS NULL AND owner IN (SELECT name FROM api_tokens WHERE revoked_at IS NOT NULL);
      UPDATE webhook_deliveries
        SET status = 'failed', updated_at = ${now[dialect]},
            last_error = 'endpoint disabled (' || (SELECT disabled_reason FROM webhook_endpoints WHERE id = endpoint_id) || ')'
        WHERE status = 'pending' AND endpoint_id IN (SELECT id FROM webhook_endpoints WHERE disabled_at IS NOT NULL);
    `,
    down: `
      DELETE FROM webhook_deliveries WHERE endpoint_id IN (SELECT id FROM webhook_endpoints WHERE disabled_at IS NOT NULL);
      DELETE FROM webhook_endpoints WHERE disabled_at IS NOT NULL;
      ALTER TABLE webhook_endpoints DROP COLUMN disabled_reason;
      ALTER TABLE webhook_endpoints DROP COLUMN disabled_at;
    `,
  },
  {
    version: 9,
    name: 'index failed webhook deliveries by failure time',
    // Failed deliveries are pruned WEBHOOK_FAILED_RETENTION_MS after they failed (`updated_at`, which
    // nothing changes on a failed row), oldest first, by this partial index; a redelivered one that
    // fails again starts over. The index by `created_at` stays for `webhooks failed` and the metrics.
    up: "CREATE INDEX webhook_deliveries_failed_at ON webhook_deliveries (updated_at) WHERE status = 'failed'",
    down: 'DROP INDEX webhook_deliveries_failed_at',
  },
  {
    version: 10,
    name: 'plant versions, updates and endpoint event types',
    // A plant's `version` is the id of its last event (0: stored before versions, unchanged since);
    // a tag page reads the (tag, id) index. `plant.updated` events keep the plant after the change
    // and `changed`, the fields that changed ('name', 'tag' or 'name,tag'). An endpoint's `events`
    // is the comma-separated list of the types it receives. The CHECKs on event types widen: on
    // SQLite by moving the column through a copy (a CHECK cannot be altered in place; the columns
    // are in no index, so DROP COLUMN takes them).
    up: (dialect) => `
      ALTER TABLE plants ADD COLUMN version ${dialect === 'sqlite' ? 'INTEGER' : 'BIGINT'} NOT NULL DEFAULT 0;
      CREATE INDEX plants_tag ON plants (tag, id);
      ${widenCheck(dialect, 'plant_events', 'type', "'plant.created'", EVENTS)}
      ALTER TABLE plant_events ADD COLUMN changed TEXT;
      ALTER TABLE webhook_endpoints ADD COLUMN events TEXT NOT NULL DEFAULT 'plant.created';
      ${widenCheck(dialect, 'webhook_deliveries', 'event', "'plant.created'", [...EVENTS, "'webhook.ping'"])}
    `,
    down: (dialect) => `
      DELETE FROM webhook_deliveries WHERE event IN ('plant.updated', 'plant.deleted');
      ${widenCheck(dialect, 'webhook_deliveries', 'event', "'plant.created'", ["'plant.created'", "'webhook.ping'"])}
      ALTER TABLE webhook_endpoints DROP COLUMN events;
      DELETE FROM plant_events WHERE type = 'plant.updated';
      ALTER TABLE plant_events DROP COLUMN changed;
      ${widenCheck(dialect, 'plant_events', 'type', "'plant.created'", ["'plant.created'", "'plant.deleted'"])}
      DROP INDEX plants_tag;
      ALTER TABLE plants DROP COLUMN version;
    `,
  },
  {
    version: 11,
    name: 'keep the trace context of webhook deliveries',
    // The W3C `traceparent` of the traced store call that enqueued the delivery (a create, a ping, a
    // redelivery), NULL when none was: each attempt's span links to it (docs/tracing.md).
    up: 'ALTER TABLE webhook_deliveries ADD COLUMN trace_context TEXT',
    down: 'ALTER TABLE webhook_deliveries DROP COLUMN trace_context',
  },
];

/** The plant event types, as SQL literals. */
const EVENTS = ["'plant.created'", "'plant.updated'", "'plant.deleted'"];

/** Replaces the CHECK of `table.column` (TEXT NOT NULL with this default) by `column IN (values)`. */
function widenCheck(dialect: Dialect, table: string, column: string, fallback: string, values: string[]) {
  const check = `CHECK (${column} IN (${values.join(', ')}))`;
  if (dialect === 'postgres')
    return `ALTER TABLE ${table} DROP CONSTRAINT ${table}_${column}_check, ADD CONSTRAINT ${table}_${column}_check ${check};`;
  return `ALTER TABLE ${table} ADD COLUMN moved TEXT; UPDATE ${table} SET moved = ${column};
      ALTER TABLE ${table} DROP COLUMN ${column};
      ALTER TABLE ${table} ADD COLUMN ${column} TEXT NOT NULL DEFAULT ${fallback} ${check};
      UPDATE ${table} SET ${column} = moved; ALTER TABLE ${table} DROP COLUMN moved;`;
}

/** The newest schema version. */
export const LATEST_VERSION = migrations.at(-1)!.version;
