import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Database } from '../../src/store/sqlite/driver.ts';
import { describe, expect, it } from 'vitest';
import type { StoreConfig } from '../../src/config/config.ts';
import { migrations } from '../../src/store/migrations.ts';
import { migrateStore, openStore } from '../../src/store/open-store.ts';
import type { PlantStore } from '../../src/store/contract.ts';
import {
  postgresAvailable,
  postgresTestStore,
  sqliteTestStore,
  withPostgresClient,
} from '../support/stores.ts';

/** What a store's schema is, read from the database's catalog: tables, columns, indexes, constraints. */
function sqliteSchema(path: string): Promise<string[]> {
  return readSqlite(path, (db) =>
    db
      .prepare<[], { type: string; name: string; sql: string | null }>(
        // sqlite_sequence is SQLite's own (AUTOINCREMENT's counters): it outlives the tables using it.
        "SELECT type, name, sql FROM sqlite_master WHERE name NOT IN ('schema_migrations', 'sqlite_sequence') ORDER BY name",
      )
      .all()
      .map(({ type, name, sql }) => `${type} ${name}: ${(sql ?? '').replace(/\s+/g, ' ').trim()}`),
  );
}

async function readSqlite<T>(path: string, read: (db: InstanceType<typeof Database>) => T): Promise<T> {
  const db = new Database(path, { readonly: true });
  try {
    return read(db);
  } finally {
    db.close();
  }
}

async function postgresSchema(url: string): Promise<string[]> {
  return withPostgresClient(url, async (client) => {
    const columns = await client.query<{ line: string }>(`
      SELECT format('column %s.%s: %s %s default %s', table_name, column_name, data_type,
                    CASE is_nullable WHEN 'YES' THEN 'null' ELSE 'not null' END, coalesce(column_default, '-')) AS line
      FROM information_schema.columns
      WHERE table_schema = 'public' AND table_name <> 'schema_migrations'
      ORDER BY table_name, ordinal_position`);
    const indexes = await client.query<{ line: string }>(`
      SELECT format('index %s: %s', indexname, indexdef) AS line FROM pg_indexes
      WHERE schemaname = 'public' AND tablename <> 'schema_migrations' ORDER BY indexname`);
    const constraints = await client.query<{ line: string }>(`
      SELECT format('constraint %s.%s: %s', c.conrelid::regclass, c.conname, pg_get_constraintdef(c.oid)) AS line
      FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace
      WHERE n.nspname = 'public' AND c.conrelid::regclass::text <> 'schema_migrations'
      ORDER BY 1`);
    return [...columns.rows, ...indexes.rows, ...constraints.rows].map((row) => row.line);
  });
}

const MAIN = new URL('../../dist/main.js', import.meta.url).pathname;
const VERSIONS = migrations.map(({ version }) => version);
const LATEST = VERSIONS.at(-1)!;
/** The versions after `version`, oldest first. */
const after = (version: number) => VERSIONS.filter((v) => v > version);

/** One store's leg: a fresh empty database, its config, and how to read its schema and versions. */
type Leg = {
  name: string;
  /**
   * The schema of the newest version, read from the catalog (sorted): what the released migrations
   * built (before they were written once), then what each version since added.
   */
  current: string[];
  open(): Promise<{
    config: StoreConfig;
    env: Record<string, string>;
    schema(): Promise<string[]>;
    versions(): Promise<number[]>;
    /** Runs `sql` on the database, past the store. */
    exec(sql: string): Promise<void>;
    teardown(): Promise<void>;
  }>;
};

const SQLITE_RELEASED = [
  'table api_tokens: CREATE TABLE api_tokens ( name TEXT PRIMARY KEY, digest TEXT NOT NULL UNIQUE, scopes TEXT NOT NULL, created_at INTEGER NOT NULL, revoked_at INTEGER )',
  'table idempotency_keys: CREATE TABLE idempotency_keys ( token_name TEXT NOT NULL, key TEXT NOT NULL, fingerprint TEXT NOT NULL, claim TEXT NOT NULL, claimed_at INTEGER NOT NULL, status INTEGER, body TEXT, PRIMARY KEY (token_name, key) )',
  'index idempotency_keys_claimed: CREATE INDEX idempotency_keys_claimed ON idempotency_keys (claimed_at)',
  'table plants: CREATE TABLE plants (id INTEGER PRIMARY KEY, name TEXT NOT NULL, tag TEXT)',
  'index sqlite_autoindex_api_tokens_1: ',
  'index sqlite_autoindex_api_tokens_2: ',
  'index sqlite_autoindex_idempotency_keys_1: ',
  'index sqlite_autoindex_webhook_deliveries_1: ',
  "table webhook_deliveries: CREATE TABLE webhook_deliveries ( id TEXT PRIMARY KEY, url TEXT NOT NULL, payload TEXT NOT NULL, status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')), attempts INTEGER NOT NULL DEFAULT 0, next_attempt_at INTEGER NOT NULL, last_error TEXT, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL )",
  "index webhook_deliveries_delivered: CREATE INDEX webhook_deliveries_delivered ON webhook_deliveries (updated_at) WHERE status = 'delivered'",
  "index webhook_deliveries_due_by_url: CREATE INDEX webhook_deliveries_due_by_url ON webhook_deliveries (url, next_attempt_at) WHERE status = 'pending'",
  "index webhook_deliveries_failed: CREATE INDEX webhook_deliveries_failed ON webhook_deliveries (created_at) WHERE status = 'failed'",
];
/** What version 5 (the event log) adds, per store. */
const SQLITE_EVENT_LOG = [
  'table event_log: CREATE TABLE event_log ( id INTEGER PRIMARY KEY CHECK (id = 1), pruned_through INTEGER NOT NULL )',
  "table plant_events: CREATE TABLE plant_events ( id INTEGER PRIMARY KEY AUTOINCREMENT, type TEXT NOT NULL CHECK (type IN ('plant.created', 'plant.deleted')), plant_id INTEGER NOT NULL, name TEXT, tag TEXT, created_at INTEGER NOT NULL )",
  'index plant_events_created: CREATE INDEX plant_events_created ON plant_events (created_at)',
];
const POSTGRES_EVENT_LOG = [
  'column event_log.id: integer not null default -',
  'column event_log.pruned_through: bigint not null default -',
  'column plant_events.id: bigint not null default -',
  'column plant_events.type: text not null default -',
  'column plant_events.plant_id: bigint not null default -',
  'column plant_events.name: text null default -',
  'column plant_events.tag: text null default -',
  'column plant_events.created_at: timestamp with time zone not null default now()',
  'index event_log_pkey: CREATE UNIQUE INDEX event_log_pkey ON public.event_log USING btree (id)',
  'index plant_events_created: CREATE INDEX plant_events_created ON public.plant_events USING btree (created_at)',
  'index plant_events_pkey: CREATE UNIQUE INDEX plant_events_pkey ON public.plant_events USING btree (id)',
  'constraint event_log.event_log_id_check: CHECK ((id = 1))',
  'constraint event_log.event_log_pkey: PRIMARY KEY (id)',
  'constraint plant_events.plant_events_pkey: PRIMARY KEY (id)',
  "constraint plant_events.plant_events_type_check: CHECK ((type = ANY (ARRAY['plant.created'::text, 'plant.deleted'::text])))",
];
const POSTGRES_RELEASED = [
  'column api_tokens.name: text not null default -',
  'column api_tokens.digest: text not null default -',
  'column api_tokens.scopes: text not null default -',
  'column api_tokens.created_at: timestamp with time zone not null default now()',
  'column api_tokens.revoked_at: timestamp with time zone null default -',
  'column idempotency_keys.token_name: text not null default -',
  'column idempotency_keys.key: text not null default -',
  'column idempotency_keys.fingerprint: text not null default -',
  'column idempotency_keys.claim: text not null default -',
  'column idempotency_keys.claimed_at: timestamp with time zone not null default now()',
  'column idempotency_keys.status: integer null default -',
  'column idempotency_keys.body: text null default -',
  'column plants.id: bigint not null default -',
  'column plants.name: text not null default -',
  'column plants.tag: text null default -',
  'column webhook_deliveries.id: text not null default -',
  'column webhook_deliveries.url: text not null default -',
  'column webhook_deliveries.payload: text not null default -',
  "column webhook_deliveries.status: text not null default 'pending'::text",
  'column webhook_deliveries.attempts: integer not null default 0',
  'column webhook_deliveries.next_attempt_at: timestamp with time zone not null default now()',
  'column webhook_deliveries.last_error: text null default -',
  'column webhook_deliveries.created_at: timestamp with time zone not null default now()',
  'column webhook_deliveries.updated_at: timestamp with time zone not null default now()',
  'index api_tokens_digest_key: CREATE UNIQUE INDEX api_tokens_digest_key ON public.api_tokens USING btree (digest)',
  'index api_tokens_pkey: CREATE UNIQUE INDEX api_tokens_pkey ON public.api_tokens USING btree (name)',
  'index idempotency_keys_claimed: CREATE INDEX idempotency_keys_claimed ON public.idempotency_keys USING btree (claimed_at)',
  'index idempotency_keys_pkey: CREATE UNIQUE INDEX idempotency_keys_pkey ON public.idempotency_keys USING btree (token_name, key)',
  'index plants_pkey: CREATE UNIQUE INDEX plants_pkey ON public.plants USING btree (id)',
  "index webhook_deliveries_delivered: CREATE INDEX webhook_deliveries_delivered ON public.webhook_deliveries USING btree (updated_at) WHERE (status = 'delivered'::text)",
  "index webhook_deliveries_due_by_url: CREATE INDEX webhook_deliveries_due_by_url ON public.webhook_deliveries USING btree (url, next_attempt_at) WHERE (status = 'pending'::text)",
  "index webhook_deliveries_failed: CREATE INDEX webhook_deliveries_failed ON public.webhook_deliveries USING btree (created_at) WHERE (status = 'failed'::text)",
  'index webhook_deliveries_pkey: CREATE UNIQUE INDEX webhook_deliveries_pkey ON public.webhook_deliveries USING btree (id)',
  'constraint api_tokens.api_tokens_digest_key: UNIQUE (digest)',
  'constraint api_tokens.api_tokens_pkey: PRIMARY KEY (name)',
  'constraint idempotency_keys.idempotency_keys_pkey: PRIMARY KEY (token_name, key)',
  'constraint plants.plants_pkey: PRIMARY KEY (id)',
  'constraint webhook_deliveries.webhook_deliveries_pkey: PRIMARY KEY (id)',
  "constraint webhook_deliveries.webhook_deliveries_status_check: CHECK ((status = ANY (ARRAY['pending'::text, 'delivered'::text, 'failed'::text])))",
];

/**
 * What version 7 (webhook endpoints) adds, per store, and the lines of the released schema it
 * changes: the deliveries' new columns (SQLite shows them in the table's text) and the operator due index.
 */
const SQLITE_ENDPOINTS = [
  'index sqlite_autoindex_webhook_endpoints_1: ',
  'index webhook_deliveries_by_endpoint: CREATE INDEX webhook_deliveries_by_endpoint ON webhook_deliveries (endpoint_id, created_at) WHERE endpoint_id IS NOT NULL',
  "index webhook_deliveries_due_by_endpoint: CREATE INDEX webhook_deliveries_due_by_endpoint ON webhook_deliveries (endpoint_id, next_attempt_at) WHERE status = 'pending' AND endpoint_id IS NOT NULL",
  "index webhook_deliveries_due_by_url: CREATE INDEX webhook_deliveries_due_by_url ON webhook_deliveries (url, next_attempt_at) WHERE status = 'pending' AND endpoint_id IS NULL",
  'index webhook_endpoints_owner: CREATE INDEX webhook_endpoints_owner ON webhook_endpoints (owner, created_at)',
  "table webhook_deliveries: CREATE TABLE webhook_deliveries ( id TEXT PRIMARY KEY, url TEXT NOT NULL, payload TEXT NOT NULL, status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')), attempts INTEGER NOT NULL DEFAULT 0, next_attempt_at INTEGER NOT NULL, last_error TEXT, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL , endpoint_id TEXT, event TEXT NOT NULL DEFAULT 'plant.created' CHECK (event IN ('plant.created', 'webhook.ping')), last_response_code INTEGER)",
  'table webhook_endpoints: CREATE TABLE webhook_endpoints ( id TEXT PRIMARY KEY, owner TEXT NOT NULL, url TEXT NOT NULL, description TEXT, secret TEXT NOT NULL, previous_secret TEXT, previous_secret_expires_at INTEGER, created_at INTEGER NOT NULL )',
];
const POSTGRES_ENDPOINTS = [
  'column webhook_deliveries.endpoint_id: text null default -',
  "column webhook_deliveries.event: text not null default 'plant.created'::text",
  'column webhook_deliveries.last_response_code: integer null default -',
  'column webhook_endpoints.created_at: timestamp with time zone not null default now()',
  'column webhook_endpoints.description: text null default -',
  'column webhook_endpoints.id: text not null default -',
  'column webhook_endpoints.owner: text not null default -',
  'column webhook_endpoints.previous_secret: text null default -',
  'column webhook_endpoints.previous_secret_expires_at: timestamp with time zone null default -',
  'column webhook_endpoints.secret: text not null default -',
  'column webhook_endpoints.url: text not null default -',
  "constraint webhook_deliveries.webhook_deliveries_event_check: CHECK ((event = ANY (ARRAY['plant.created'::text, 'webhook.ping'::text])))",
  'constraint webhook_endpoints.webhook_endpoints_pkey: PRIMARY KEY (id)',
  'index webhook_deliveries_by_endpoint: CREATE INDEX webhook_deliveries_by_endpoint ON public.webhook_deliveries USING btree (endpoint_id, created_at, id) WHERE (endpoint_id IS NOT NULL)',
  "index webhook_deliveries_due_by_endpoint: CREATE INDEX webhook_deliveries_due_by_endpoint ON public.webhook_deliveries USING btree (endpoint_id, next_attempt_at) WHERE ((status = 'pending'::text) AND (endpoint_id IS NOT NULL))",
  "index webhook_deliveries_due_by_url: CREATE INDEX webhook_deliveries_due_by_url ON public.webhook_deliveries USING btree (url, next_attempt_at) WHERE ((status = 'pending'::text) AND (endpoint_id IS NULL))",
  'index webhook_endpoints_owner: CREATE INDEX webhook_endpoints_owner ON public.webhook_endpoints USING btree (owner, created_at)',
  'index webhook_endpoints_pkey: CREATE UNIQUE INDEX webhook_endpoints_pkey ON public.webhook_endpoints USING btree (id)',
];
/** What version 9 (failed deliveries pruned by the time they failed) adds, per store. */
const SQLITE_FAILED_AT = [
  "index webhook_deliveries_failed_at: CREATE INDEX webhook_deliveries_failed_at ON webhook_deliveries (updated_at) WHERE status = 'failed'",
];
const POSTGRES_FAILED_AT = [
  "index webhook_deliveries_failed_at: CREATE INDEX webhook_deliveries_failed_at ON public.webhook_deliveries USING btree (updated_at) WHERE (status = 'failed'::text)",
];
/** The released lines version 7 replaces. */
const CHANGED_BY_ENDPOINTS = ['index webhook_deliveries_due_by_url:', 'table webhook_deliveries:'];
const unchanged = (lines: string[]) =>
  lines.filter((line) => !CHANGED_BY_ENDPOINTS.some((prefix) => line.startsWith(prefix)));

/** What version 8 (disabled endpoints) adds: two columns (SQLite shows them in the table's text). */
const DISABLED_REASONS = "'token_revoked', 'token_inactive', 'token_lacks_read', 'operator', 'legacy_owner'";
const SQLITE_DISABLED_ENDPOINTS =
  'table webhook_endpoints: CREATE TABLE webhook_endpoints ( id TEXT PRIMARY KEY, owner TEXT NOT NULL, url TEXT NOT NULL, description TEXT, secret TEXT NOT NULL, previous_secret TEXT, previous_secret_expires_at INTEGER, created_at INTEGER NOT NULL ' +
  `, disabled_at INTEGER, disabled_reason TEXT CHECK (disabled_reason IN (${DISABLED_REASONS})))`;
const POSTGRES_DISABLED_ENDPOINTS = [
  'column webhook_endpoints.disabled_at: timestamp with time zone null default -',
  'column webhook_endpoints.disabled_reason: text null default -',
  `constraint webhook_endpoints.webhook_endpoints_disabled_reason_check: CHECK ((disabled_reason = ANY (ARRAY[${DISABLED_REASONS.replaceAll("',", "'::text,")}::text])))`,
];
/** Version 7's schema with version 8's table of endpoints (SQLite). */
const withDisabledEndpoints = (lines: string[]) =>
  lines.map((line) => (line.startsWith('table webhook_endpoints:') ? SQLITE_DISABLED_ENDPOINTS : line));

/** Replaces each schema line that starts with a key of `replacements` by that key's line. */
const replacing = (replacements: Record<string, string>) => (lines: string[]) =>
  lines.map((line) => {
    const key = Object.keys(replacements).find((prefix) => line.startsWith(prefix));
    return key === undefined ? line : replacements[key]!;
  });

/**
 * What version 10 (plant versions, updates, endpoint event types) changes: a version per plant and
 * its (tag, id) index, `plant.updated` events with `changed`, endpoints' `events`, and the wider
 * event type CHECKs (SQLite moves the checked column to the end of its table).
 */
const SQLITE_UPDATES: Record<string, string> = {
  'table plants:':
    'table plants: CREATE TABLE plants (id INTEGER PRIMARY KEY, name TEXT NOT NULL, tag TEXT, version INTEGER NOT NULL DEFAULT 0)',
  'table plant_events:':
    "table plant_events: CREATE TABLE plant_events ( id INTEGER PRIMARY KEY AUTOINCREMENT, plant_id INTEGER NOT NULL, name TEXT, tag TEXT, created_at INTEGER NOT NULL , type TEXT NOT NULL DEFAULT 'plant.created' CHECK (type IN ('plant.created', 'plant.updated', 'plant.deleted')), changed TEXT)",
  'table webhook_deliveries:':
    "table webhook_deliveries: CREATE TABLE webhook_deliveries ( id TEXT PRIMARY KEY, url TEXT NOT NULL, payload TEXT NOT NULL, status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')), attempts INTEGER NOT NULL DEFAULT 0, next_attempt_at INTEGER NOT NULL, last_error TEXT, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL , endpoint_id TEXT, last_response_code INTEGER, event TEXT NOT NULL DEFAULT 'plant.created' CHECK (event IN ('plant.created', 'plant.updated', 'plant.deleted', 'webhook.ping')))",
  'table webhook_endpoints:': `${SQLITE_DISABLED_ENDPOINTS.slice(0, -1)}, events TEXT NOT NULL DEFAULT 'plant.created')`,
};
const withUpdates = (lines: string[]) => [
  ...replacing(SQLITE_UPDATES)(lines),
  'index plants_tag: CREATE INDEX plants_tag ON plants (tag, id)',
];
const POSTGRES_UPDATES = [
  'column plants.version: bigint not null default 0',
  'column plant_events.changed: text null default -',
  "column webhook_endpoints.events: text not null default 'plant.created'::text",
  'index plants_tag: CREATE INDEX plants_tag ON public.plants USING btree (tag, id)',
];
const POSTGRES_WIDER_CHECKS: Record<string, string> = {
  'constraint plant_events.plant_events_type_check:':
    "constraint plant_events.plant_events_type_check: CHECK ((type = ANY (ARRAY['plant.created'::text, 'plant.updated'::text, 'plant.deleted'::text])))",
  'constraint webhook_deliveries.webhook_deliveries_event_check:':
    "constraint webhook_deliveries.webhook_deliveries_event_check: CHECK ((event = ANY (ARRAY['plant.created'::text, 'plant.updated'::text, 'plant.deleted'::text, 'webhook.ping'::text])))",
};
const withWiderChecks = replacing(POSTGRES_WIDER_CHECKS);

/** What version 11 (the deliveries' trace context) adds: a column (SQLite shows it in the table's text). */
const withTraceContext = (lines: string[]) =>
  lines.map((line) =>
    line.startsWith('table webhook_deliveries:') ? line.replace(/\)$/, ', trace_context TEXT)') : line,
  );
const POSTGRES_TRACE_CONTEXT = ['column webhook_deliveries.trace_context: text null default -'];

/** What version 12 (the version a keyed answer gave) adds: a column (SQLite puts it before the key). */
const withAnswerVersion = (lines: string[]) =>
  lines.map((line) =>
    line.startsWith('table idempotency_keys:')
      ? line.replace(', PRIMARY KEY', ', version BIGINT, PRIMARY KEY')
      : line,
  );
const POSTGRES_ANSWER_VERSION = ['column idempotency_keys.version: bigint null default -'];

/** What version 13 (SQLite's tag pages read from their index alone) changes: what the index holds. */
const withCoveredTags = (lines: string[]) =>
  lines.map((line) =>
    line === 'index plants_tag: CREATE INDEX plants_tag ON plants (tag, id)'
      ? 'index plants_tag: CREATE INDEX plants_tag ON plants (tag, id, name, version)'
      : line,
  );

/**
 * What version 14 (SQLite's event type CHECKs as ORs) changes: the same values, each column moved to
 * the end of its table again.
 */
const SQLITE_OR_CHECKS: Record<string, string> = {
  'table plant_events:':
    "table plant_events: CREATE TABLE plant_events ( id INTEGER PRIMARY KEY AUTOINCREMENT, plant_id INTEGER NOT NULL, name TEXT, tag TEXT, created_at INTEGER NOT NULL , changed TEXT, type TEXT NOT NULL DEFAULT 'plant.created' CHECK (type = 'plant.created' OR type = 'plant.updated' OR type = 'plant.deleted'))",
  'table webhook_deliveries:':
    "table webhook_deliveries: CREATE TABLE webhook_deliveries ( id TEXT PRIMARY KEY, url TEXT NOT NULL, payload TEXT NOT NULL, status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')), attempts INTEGER NOT NULL DEFAULT 0, next_attempt_at INTEGER NOT NULL, last_error TEXT, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL , endpoint_id TEXT, last_response_code INTEGER, trace_context TEXT, event TEXT NOT NULL DEFAULT 'plant.created' CHECK (event = 'plant.created' OR event = 'plant.updated' OR event = 'plant.deleted' OR event = 'webhook.ping'))",
};
const withOrChecks = replacing(SQLITE_OR_CHECKS);

/** What version 15 (blocked principals of identity providers) adds, per store. */
const SQLITE_BLOCKED_PRINCIPALS = [
  'index sqlite_autoindex_blocked_principals_1: ',
  'table blocked_principals: CREATE TABLE blocked_principals ( issuer TEXT NOT NULL, subject TEXT NOT NULL, blocked_at INTEGER NOT NULL, PRIMARY KEY (issuer, subject) )',
];
const POSTGRES_BLOCKED_PRINCIPALS = [
  'column blocked_principals.blocked_at: timestamp with time zone not null default now()',
  'column blocked_principals.issuer: text not null default -',
  'column blocked_principals.subject: text not null default -',
  'constraint blocked_principals.blocked_principals_pkey: PRIMARY KEY (issuer, subject)',
  'index blocked_principals_pkey: CREATE UNIQUE INDEX blocked_principals_pkey ON public.blocked_principals USING btree (issuer, subject)',
];

const sqliteLeg: Leg = {
  name: 'SQLite',
  current: withOrChecks(
    withCoveredTags(
      withAnswerVersion(
        withTraceContext(
          withUpdates(
            withDisabledEndpoints([
              ...unchanged(SQLITE_RELEASED),
              ...SQLITE_EVENT_LOG,
              ...SQLITE_ENDPOINTS,
              ...SQLITE_FAILED_AT,
            ]),
          ),
        ),
      ),
    ),
  )
    .concat(SQLITE_BLOCKED_PRINCIPALS)
    .sort(),
  async open() {
    const store = await sqliteTestStore.setup();
    const path = store.env.DATABASE_URL!.slice('file:'.length);
    return {
      config: { kind: 'sqlite', path },
      env: store.env,
      schema: () => sqliteSchema(path),
      versions: () =>
        readSqlite(path, (db) =>
          db
            .prepare<[], { version: number }>('SELECT version FROM schema_migrations ORDER BY version')
            .all()
            .map((row) => row.version),
        ),
      async exec(sql) {
        const db = new Database(path);
        try {
          db.exec(sql);
        } finally {
          db.close();
        }
      },
      teardown: () => store.teardown(),
    };
  },
};

const postgresLeg: Leg = {
  name: 'PostgreSQL',
  current: withWiderChecks([
    ...unchanged(POSTGRES_RELEASED),
    ...POSTGRES_EVENT_LOG,
    ...POSTGRES_ENDPOINTS,
    ...POSTGRES_FAILED_AT,
    ...POSTGRES_DISABLED_ENDPOINTS,
    ...POSTGRES_UPDATES,
    ...POSTGRES_TRACE_CONTEXT,
    ...POSTGRES_ANSWER_VERSION,
    ...POSTGRES_BLOCKED_PRINCIPALS,
  ]).sort(),
  async open() {
    const store = await postgresTestStore.setup();
    const url = store.env.DATABASE_URL!;
    return {
      config: { kind: 'postgres', url, poolSize: 2, timeoutMs: 5_000 },
      env: store.env,
      schema: () => postgresSchema(url),
      versions: () =>
        withPostgresClient(url, async (client) => {
          const { rows } = await client.query<{ version: number }>(
            'SELECT version FROM schema_migrations ORDER BY version',
          );
          return rows.map((row) => row.version);
        }),
      exec: (sql) =>
        withPostgresClient(url, async (client) => {
          await client.query(sql);
        }),
      teardown: () => store.teardown(),
    };
  },
};

const legs = postgresAvailable() ? [sqliteLeg, postgresLeg] : [sqliteLeg];

type TestDatabase = Awaited<ReturnType<Leg['open']>>;

/** Runs `test` on a fresh empty database of `leg`, dropped afterwards. */
async function withDatabase(leg: Leg, test: (db: TestDatabase) => Promise<void>): Promise<void> {
  const db = await leg.open();
  try {
    await test(db);
  } finally {
    await db.teardown();
  }
}

/** Runs `use` on the store opened on `config`, closed afterwards. */
async function withStore(config: StoreConfig, use: (store: PlantStore) => Promise<void>): Promise<void> {
  const store = await openStore(config);
  try {
    await use(store);
  } finally {
    await store.close();
  }
}

describe.each(legs)('migrations on $name', (leg) => {
  it('up from empty applies every version and builds the schema of the newest', async () => {
    await withDatabase(leg, async (db) => {
      expect(await migrateStore(db.config)).toStrictEqual({ applied: VERSIONS, reverted: [] });
      expect((await db.schema()).sort()).toStrictEqual(leg.current);
      expect(await db.versions()).toStrictEqual(VERSIONS);
      // Current: a second run (another instance, the next start) applies nothing.
      expect(await migrateStore(db.config)).toStrictEqual({ applied: [], reverted: [] });
    });
  });

  it('down to 0 drops everything, newest first, and up again builds the same schema', async () => {
    await withDatabase(leg, async (db) => {
      await migrateStore(db.config);
      expect(await migrateStore(db.config, { to: 0 })).toStrictEqual({
        applied: [],
        reverted: [...VERSIONS].reverse(),
      });
      expect(await db.schema()).toStrictEqual([]);
      expect(await db.versions()).toStrictEqual([]);
      expect(await migrateStore(db.config)).toStrictEqual({ applied: VERSIONS, reverted: [] });
      expect((await db.schema()).sort()).toStrictEqual(leg.current);
    });
  });

  it('goes one version at a time, down to 3 restoring the due index that 4 replaced', async () => {
    await withDatabase(leg, async (db) => {
      for (const version of VERSIONS) {
        expect(await migrateStore(db.config, { to: version })).toStrictEqual({
          applied: [version],
          reverted: [],
        });
      }
      expect((await db.schema()).sort()).toStrictEqual(leg.current);
      expect(await migrateStore(db.config, { to: 3 })).toStrictEqual({
        applied: [],
        reverted: after(3).reverse(),
      });
      const indexes = (await db.schema()).filter((line) => line.startsWith('index webhook_deliveries_'));
      expect(indexes.map((line) => line.slice(0, line.indexOf(':')))).toStrictEqual([
        'index webhook_deliveries_due',
        'index webhook_deliveries_failed',
        ...(leg === postgresLeg ? ['index webhook_deliveries_pkey'] : []),
      ]);
      expect(await db.versions()).toStrictEqual([1, 2, 3]);
      expect(await migrateStore(db.config)).toStrictEqual({ applied: after(3), reverted: [] });
      expect((await db.schema()).sort()).toStrictEqual(leg.current);
    });
  });

  it('a failing version names itself, records nothing of its own, and the next run resumes', async () => {
    await withDatabase(leg, async (db) => {
      // A table in the way of version 3.
      await db.exec('CREATE TABLE api_tokens (name TEXT)');
      await expect(migrateStore(db.config)).rejects.toThrow(
        `${leg.name} migration 3 (create api tokens) failed`,
      );
      // SQLite runs every pending version in one transaction; PostgreSQL commits each on its own.
      expect(await db.versions()).toStrictEqual(leg === postgresLeg ? [1, 2] : []);
      await db.exec('DROP TABLE api_tokens');
      expect(await migrateStore(db.config)).toStrictEqual({
        applied: leg === postgresLeg ? after(2) : VERSIONS,
        reverted: [],
      });
      expect((await db.schema()).sort()).toStrictEqual(leg.current);
    });
  });

  it('keeps the rows of the versions it does not revert', async () => {
    await withDatabase(leg, async (db) => {
      await migrateStore(db.config);
      const fern = { id: 9007199254740993n, name: 'Fern', tag: 'green' };
      await withStore(db.config, async (store) => expect(await store.create(fern)).toBe(1n));
      // Down to 1 keeps `plants`; up again rebuilds the outbox and tokens around it (and the
      // plant, its events gone, is at version 0, as one stored before versions).
      await migrateStore(db.config, { to: 1 });
      await migrateStore(db.config);
      await withStore(db.config, async (store) =>
        expect(await store.get(fern.id)).toStrictEqual({ ...fern, version: 0n }),
      );
    });
  });

  it('8 disables what positional token names and revoked tokens own, failing its pending deliveries; reverting deletes it', async () => {
    await withDatabase(leg, async (db) => {
      await migrateStore(db.config, { to: 7 });
      const now = leg === postgresLeg ? 'now()' : '1';
      const id = (n: number) => `we_${String(n).padStart(24, '0')}`;
      // Endpoints as version 7 kept them: of configured tokens by position, of an issued token
      // revoked since, of an active one, and of a name that only looks positional.
      const owners = ['api-token-1', 'api-token-12', 'generated', 'gone', 'acme', 'api-token-01'];
      await db.exec(`
        INSERT INTO api_tokens (name, digest, scopes, created_at, revoked_at) VALUES
          ('gone', '${'1'.repeat(64)}', 'read,webhooks', ${now}, ${now}),
          ('acme', '${'2'.repeat(64)}', 'read,webhooks', ${now}, NULL);
        INSERT INTO webhook_endpoints (id, owner, url, secret, created_at) VALUES
          ${owners.map((owner, i) => `('${id(i + 1)}', '${owner}', 'https://hooks.example/${i + 1}', 'sealed', ${now})`).join(', ')};
        INSERT INTO webhook_deliveries (id, endpoint_id, url, payload, status, next_attempt_at, created_at, updated_at) VALUES
          ${owners.map((_, i) => `('msg_p${i + 1}', '${id(i + 1)}', 'https://hooks.example/${i + 1}', '{}', 'pending', ${now}, ${now}, ${now})`).join(', ')},
          ('msg_d1', '${id(1)}', 'https://hooks.example/1', '{}', 'delivered', ${now}, ${now}, ${now});
      `);
      expect(await migrateStore(db.config)).toStrictEqual({ applied: after(7), reverted: [] });
      await withStore(db.config, async (store) => {
        const summaries = await store.webhookEndpoints.summaries({});
        expect(
          Object.fromEntries(
            summaries.map((e) => [e.owner, [e.disabled?.reason ?? null, e.pending, e.failed]]),
          ),
        ).toStrictEqual({
          'api-token-1': ['legacy_owner', 0, 1],
          'api-token-12': ['legacy_owner', 0, 1],
          generated: ['legacy_owner', 0, 1],
          gone: ['token_revoked', 0, 1],
          acme: [null, 1, 0],
          'api-token-01': [null, 1, 0],
        });
        const page = await store.deliveries.listForEndpoint({ endpointId: id(1), limit: 10 });
        expect(
          Object.fromEntries(page!.deliveries.map((d) => [d.id, [d.status, d.lastError]])),
        ).toStrictEqual({
          msg_d1: ['delivered', null],
          msg_p1: ['failed', 'endpoint disabled (legacy_owner)'],
        });
        // Create fans out to the enabled ones only.
        expect(
          await store.create({ id: 1n, name: 'Fern' }, { outbox: { endpointPayload: '{"id":1}' } }),
        ).toBe(1n);
        expect((await store.webhookEndpoints.summaries({})).map((e) => e.pending)).toStrictEqual([
          0, 0, 0, 0, 2, 2,
        ]);
      });
      // Version 7 would deliver to them again: reverting deletes them, with their deliveries.
      await migrateStore(db.config, { to: 7 });
      await withStore(db.config, async (store) => {
        expect((await store.deliveries.counts()).failed).toBe(0);
        expect(await store.deliveries.pendingEndpoints({ limit: 10 })).toStrictEqual([id(5), id(6)]);
      });
    });
  });

  it('main.js migrate --to N prints what it applied and reverted; an unknown version is a usage error', async () => {
    await withDatabase(leg, async (db) => {
      const env = { PATH: process.env.PATH ?? '', API_TOKENS: 'plant-store-test-token', ...db.env };
      const main = (...args: string[]) =>
        promisify(execFile)(process.execPath, [MAIN, 'migrate', ...args], { env });
      expect(JSON.parse((await main('--to', '2')).stdout)).toStrictEqual({
        migrated: true,
        applied: [1, 2],
        reverted: [],
      });
      expect(JSON.parse((await main()).stdout)).toStrictEqual({ migrated: true, applied: after(2) });
      expect(JSON.parse((await main('--to', '0')).stdout)).toStrictEqual({
        migrated: true,
        applied: [],
        reverted: [...VERSIONS].reverse(),
      });
      const wrong = await main('--to', String(LATEST + 1)).then(
        () => undefined,
        (error: { code: number; stderr: string }) => error,
      );
      expect(wrong?.code).toBe(2);
      expect(wrong?.stderr).toContain(`--to must be a schema version: 0 to ${LATEST}`);
      expect(await db.versions()).toStrictEqual([]);
    });
  });
});

describe('migration 14 on SQLite', () => {
  const INSERTS = {
    plant_events: (type: string) =>
      `INSERT INTO plant_events (type, plant_id, created_at) VALUES ('${type}', 1, 0)`,
    webhook_deliveries: (event: string) =>
      `INSERT INTO webhook_deliveries (id, url, payload, next_attempt_at, created_at, updated_at, event)
        VALUES ('msg_${event}', 'http://x', '{}', 0, 0, 0, '${event}')`,
  };
  /**
   * How many temporary B-trees SQLite opens to run each insert (EXPLAIN's OpenEphemeral; read-only, it
   * opens none). A delivery keeps one: its `status` CHECK, in partial indexes, cannot move (see 14).
   */
  const temporaryTrees = (path: string) => {
    const db = new Database(path);
    try {
      return Object.values(INSERTS).map(
        (insert) =>
          db
            .prepare(`EXPLAIN ${insert('plant.created')}`)
            .all()
            .filter((step) => (step as { opcode: string }).opcode === 'OpenEphemeral').length,
      );
    } finally {
      db.close();
    }
  };

  it('checks event types without a temporary B-tree a row, refusing the same values as before', async () => {
    await withDatabase(sqliteLeg, async (db) => {
      const { path } = db.config as { path: string };
      await migrateStore(db.config, { to: 13 });
      expect(temporaryTrees(path)).toStrictEqual([1, 2]);
      await migrateStore(db.config);
      expect(temporaryTrees(path)).toStrictEqual([0, 1]);
      for (const type of ['plant.created', 'plant.updated', 'plant.deleted'])
        await db.exec(INSERTS.plant_events(type));
      for (const event of ['plant.created', 'plant.updated', 'plant.deleted', 'webhook.ping'])
        await db.exec(INSERTS.webhook_deliveries(event));
      await expect(db.exec(INSERTS.plant_events('webhook.ping'))).rejects.toThrow('CHECK constraint failed');
      await expect(db.exec(INSERTS.webhook_deliveries('plant.moved'))).rejects.toThrow(
        'CHECK constraint failed',
      );
      // Down to 13 brings the IN lists (and their cost) back, keeping the rows.
      await migrateStore(db.config, { to: 13 });
      expect(temporaryTrees(path)).toStrictEqual([1, 2]);
      const rows = await readSqlite(path, (db) =>
        ['plant_events', 'webhook_deliveries'].map(
          (table) => (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n,
        ),
      );
      expect(rows).toStrictEqual([3, 4]);
    });
  });
});
