import { PLANT_FIELDS, type PlantFieldName } from '@plant-store/schema';
import type { Dialect } from './sql.ts';

/** SQL for both dialects, or a function of the dialect where the two really differ. */
type Sql = string | ((dialect: Dialect) => string);
function sqliteOnly(sql: string): Sql {
  return (dialect) => (dialect === 'sqlite' ? sql : '');
}

export type Migration = { version: number; name: string; up: Sql; down: Sql };

/** A time: SQLite keeps epoch milliseconds (set by the store), PostgreSQL a TIMESTAMPTZ. */
const time = { sqlite: 'INTEGER', postgres: 'TIMESTAMPTZ' } as const;
const stamped = { sqlite: 'INTEGER NOT NULL', postgres: 'TIMESTAMPTZ NOT NULL DEFAULT now()' } as const;
const now = { sqlite: "CAST(unixepoch('subsec') * 1000 AS INTEGER)", postgres: 'now()' } as const;
/** The positional names configured tokens had before version 8 (`isLegacyTokenName` in auth.ts). */
const legacyOwner = {
  sqlite: `(owner = 'generated' OR (owner GLOB 'api-token-[1-9]*' AND length(owner) <= 21
            AND substr(owner, 11) NOT GLOB '*[^0-9]*'))`,
  postgres: `(owner = 'generated' OR owner ~ '^api-token-[1-9][0-9]{0,10}$')`,
} as const;

const EVENTS = ["'plant.created'", "'plant.updated'", "'plant.deleted'"];
const DELIVERY_EVENTS = [...EVENTS, "'webhook.ping'"];
const typeChecks = (or: boolean) =>
  `${widenCheck('sqlite', 'plant_events', 'type', EVENTS, or)} ${widenCheck('sqlite', 'webhook_deliveries', 'event', DELIVERY_EVENTS, or)}`;

/**
 * Both stores' schema versions, applied in order and reverted by `migrate --to N`. Never edit a released
 * one (`schema_migrations` records them): add the next. Keep to SQL that CockroachDB and YugabyteDB
 * also run: plain types, no extensions, no triggers.
 */
export const migrations: readonly Migration[] = [
  {
    version: 1,
    name: 'create plants',
    // Both signed 64-bit, PlantId's range; on SQLite, INTEGER PRIMARY KEY makes id the rowid (one B-tree).
    up: (dialect) =>
      `CREATE TABLE plants (id ${dialect === 'sqlite' ? 'INTEGER' : 'BIGINT'} PRIMARY KEY, name TEXT NOT NULL, tag TEXT)`,
    down: 'DROP TABLE plants',
  },
  {
    version: 2,
    name: 'create webhook deliveries',
    // `payload` is TEXT, not JSONB, so every attempt signs the same bytes; `next_attempt_at` ends a lease.
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
    // The SHA-256 digest of each token's secret, never the secret; revoked tokens stay for audit.
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
    // Subscribers are claimed one by one, so no backlog stands before another's.
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
    // Ids commit in order (AUTOINCREMENT; PostgreSQL: an advisory lock held from drawing one to COMMIT).
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
    // A claim inserts the row (no `status`: in flight); the change's transaction stores its answer.
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
    // No foreign key from deliveries: a create fanning out to an endpoint being deleted must not fail.
    // Operator and endpoint deliveries have their own due indexes, so neither walks past the other's rows.
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
    // Endpoints of positional token names (`api-token-N`) are disabled, never handed to whichever token
    // now stands there. Reverting deletes disabled endpoints: version 7 would deliver to them again.
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
    // Failed deliveries are pruned by when they failed (`updated_at`, unchanged on a failed row).
    up: "CREATE INDEX webhook_deliveries_failed_at ON webhook_deliveries (updated_at) WHERE status = 'failed'",
    down: 'DROP INDEX webhook_deliveries_failed_at',
  },
  {
    version: 10,
    name: 'plant versions, updates and endpoint event types',
    // A plant's `version` is its last event's id (0: unchanged since before versions). SQLite cannot
    // alter a CHECK, so widening one moves the column through a copy (it is in no index).
    up: (dialect) => `
      ALTER TABLE plants ADD COLUMN version ${dialect === 'sqlite' ? 'INTEGER' : 'BIGINT'} NOT NULL DEFAULT 0;
      CREATE INDEX plants_tag ON plants (tag, id);
      ${widenCheck(dialect, 'plant_events', 'type', EVENTS)}
      ALTER TABLE plant_events ADD COLUMN changed TEXT;
      ALTER TABLE webhook_endpoints ADD COLUMN events TEXT NOT NULL DEFAULT 'plant.created';
      ${widenCheck(dialect, 'webhook_deliveries', 'event', DELIVERY_EVENTS)}
    `,
    down: (dialect) => `
      DELETE FROM webhook_deliveries WHERE event IN ('plant.updated', 'plant.deleted');
      ${widenCheck(dialect, 'webhook_deliveries', 'event', ["'plant.created'", "'webhook.ping'"])}
      ALTER TABLE webhook_endpoints DROP COLUMN events;
      DELETE FROM plant_events WHERE type = 'plant.updated';
      ALTER TABLE plant_events DROP COLUMN changed;
      ${widenCheck(dialect, 'plant_events', 'type', ["'plant.created'", "'plant.deleted'"])}
      DROP INDEX plants_tag;
      ALTER TABLE plants DROP COLUMN version;
    `,
  },
  {
    version: 11,
    name: 'keep the trace context of webhook deliveries',
    // The `traceparent` of the traced call that enqueued a delivery: its attempts link to it.
    up: 'ALTER TABLE webhook_deliveries ADD COLUMN trace_context TEXT',
    down: 'ALTER TABLE webhook_deliveries DROP COLUMN trace_context',
  },
  {
    version: 12,
    name: 'keep the version a keyed answer gave',
    // A replayed create or update carries the ETag its first answer had.
    up: 'ALTER TABLE idempotency_keys ADD COLUMN version BIGINT',
    down: 'ALTER TABLE idempotency_keys DROP COLUMN version',
  },
  {
    version: 13,
    name: 'cover tag pages with their index',
    // SQLite reads a tag's page from the index alone, not from rows spread over the table. PostgreSQL
    // keeps (tag, id): given a wider index, its planner reads a common tag through the primary key.
    up: sqliteOnly('DROP INDEX plants_tag; CREATE INDEX plants_tag ON plants (tag, id, name, version)'),
    down: sqliteOnly('DROP INDEX plants_tag; CREATE INDEX plants_tag ON plants (tag, id)'),
  },
  {
    version: 14,
    name: 'event type checks without a temporary table',
    // The same checks, as ORs on SQLite: as IN, they cost every event and delivery written 1-2 µs.
    up: sqliteOnly(typeChecks(true)),
    down: sqliteOnly(typeChecks(false)),
  },
  {
    version: 15,
    name: 'create blocked principals',
    // Principals of identity providers cut off by `principal block` (docs/identity.md).
    up: (dialect) => `
      CREATE TABLE blocked_principals (
        issuer TEXT NOT NULL,
        subject TEXT NOT NULL,
        blocked_at ${stamped[dialect]},
        PRIMARY KEY (issuer, subject)
      )
    `,
    down: 'DROP TABLE blocked_principals',
  },
];

/**
 * Replaces the CHECK of `table.column` (TEXT NOT NULL DEFAULT 'plant.created') by `column IN (values)`, or
 * by ORs: SQLite checks an IN of three values or more through a temporary B-tree, each row written.
 */
function widenCheck(dialect: Dialect, table: string, column: string, values: string[], or = false) {
  const test = or
    ? values.map((value) => `${column} = ${value}`).join(' OR ')
    : `${column} IN (${values.join(', ')})`;
  const check = `CHECK (${test})`;
  if (dialect === 'postgres')
    return `ALTER TABLE ${table} DROP CONSTRAINT ${table}_${column}_check, ADD CONSTRAINT ${table}_${column}_check ${check};`;
  return `ALTER TABLE ${table} ADD COLUMN moved TEXT; UPDATE ${table} SET moved = ${column};
      ALTER TABLE ${table} DROP COLUMN ${column};
      ALTER TABLE ${table} ADD COLUMN ${column} TEXT NOT NULL DEFAULT 'plant.created' ${check};
      UPDATE ${table} SET ${column} = moved; ALTER TABLE ${table} DROP COLUMN moved;`;
}

/**
 * The migration that adds the optional field `name` of `PLANT_FIELDS`: its column in `plants` and in
 * `plant_events`, the same in both dialects (rows stored before it have none). Append it to
 * `migrations` with the next version number, such as `plantFieldMigration(16, 'notes')`.
 */
export function plantFieldMigration(version: number, name: PlantFieldName): Migration {
  const { column, required } = PLANT_FIELDS[name] as { column: string; required: boolean };
  // Rows stored before the field would break "required": such a field needs a default, written by hand.
  if (required) throw new Error(`plantFieldMigration adds optional fields only (${name} is required)`);
  const tables = ['plants', 'plant_events'];
  return {
    version,
    name: `add the plant field ${name}`,
    up: tables.map((table) => `ALTER TABLE ${table} ADD COLUMN ${column} TEXT;`).join(' '),
    down: tables.map((table) => `ALTER TABLE ${table} DROP COLUMN ${column};`).join(' '),
  };
}

export const LATEST_VERSION = migrations.at(-1)!.version;
