// The stores runs start from: SQLite files the api created and migrated, filled once per invocation
// and copied for each run; a fresh PostgreSQL database per run; the webhook subscriber.
import { randomBytes } from 'node:crypto';
import { copyFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { progress, TOKEN, warn } from './session.mjs';
import { round2 } from './stats.mjs';
import { makeTempDir, send, spawnServer } from './system.mjs';
import { BIG_ROWS, PLANT_NAME, PLANT_TAG, READ_ROWS, TAGS } from './workload.mjs';

/**
 * A store of `rows` plants, `rowOf(i)` → [id, name, tag]: the api creates and migrates the file (its
 * own schema), then it is filled in one transaction. Returns the template to `copyStore` from.
 */
export async function makeStore(settings, label, rows, rowOf) {
  const dir = makeTempDir(`${label}-template`, settings.tmpBase);
  const server = await spawnServer('api', { dir, token: TOKEN, log: false });
  try {
    await server.ready();
  } finally {
    await server.stop();
  }
  const started = performance.now();
  const db = new Database(join(dir, 'plants.db'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = OFF');
  const insert = db.prepare('INSERT INTO plants (id, name, tag) VALUES (?, ?, ?)');
  db.transaction(() => {
    for (let i = 0; i < rows; i++) insert.run(...rowOf(i));
  })();
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  progress(
    `[${label}] a store of ${rows.toLocaleString('en-US')} plants in ${Math.round(performance.now() - started)} ms`,
  );
  return { dir, files: readdirSync(dir).filter((f) => f.startsWith('plants.db')) };
}

/** Copies a template's files into `dir`. */
export function copyStore(template, dir) {
  for (const file of template.files) copyFileSync(join(template.dir, file), join(dir, file));
}

/** Counts the plants in a SQLite file, less the `prefilled` ones. */
export function sqliteRows(file, prefilled = 0) {
  const db = new Database(file, { readonly: true });
  try {
    return Number(db.prepare('SELECT count(*) AS n FROM plants').get().n) - prefilled;
  } finally {
    db.close();
  }
}

const templates = new Map();
/** A copy of a store made once per invocation, for a scenario's `open`: reads cycle through its ids. */
const copyOf = (key, rows, rowOf) => async (settings, dir) => {
  if (!templates.has(key)) templates.set(key, makeStore(settings, key, rows, rowOf));
  copyStore(await templates.get(key), dir);
  return { idModulo: rows, countRows: null };
};
/** READ_ROWS plants, ids 1…READ_ROWS, all "Fern" in tag `bench`. */
export const readStore = copyOf('read-store', READ_ROWS, (i) => [i + 1, PLANT_NAME, PLANT_TAG]);
/** BIG_ROWS plants in TAGS tags (`t<id mod TAGS>`), for the filtered pages. */
export const taggedStore = copyOf('tagged-store', BIG_ROWS, (i) => [i + 1, PLANT_NAME, `t${(i + 1) % TAGS}`]);

/** `readStore`, and the api accepting JWTs of a loopback issuer: the load sends one of its tokens. */
export async function jwtReadStore(settings, dir) {
  const store = await readStore(settings, dir);
  const { AUDIENCE, startIssuer } = await import('./issuer.mjs');
  const issuer = await startIssuer();
  return {
    ...store,
    env: { OIDC_ISSUER: issuer.issuer, OIDC_AUDIENCE: AUDIENCE },
    bearer: issuer.token,
    close: issuer.close,
  };
}

/** The server `pnpm bench` uses when BENCH_DATABASE_URL is unset: the local one, if it answers. */
export const DEFAULT_POSTGRES_URL = 'postgres://postgres@127.0.0.1:5432/postgres';

/** Whether a PostgreSQL server answers at `url` within a second. */
export const postgresAnswers = (url) =>
  query(url, 'SELECT 1').then(
    () => true,
    () => false,
  );

/** The URL with its password hidden, for the report. */
export function redact(url) {
  const parsed = new URL(url);
  if (parsed.password) parsed.password = '***';
  return parsed.toString();
}

async function query(connectionString, text) {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString, connectionTimeoutMillis: 1000 });
  client.on('error', () => {});
  await client.connect();
  try {
    return await client.query(text);
  } finally {
    await client.end();
  }
}

/**
 * A fresh database `plant_store_bench_<pid>_<tag>` on the server of `baseUrl`, for a scenario's
 * `open`: its URL, a row counter and `close`, which drops it. Where the role may not create one,
 * runs share `baseUrl`'s database, with ids above any earlier run's and no row count.
 */
export async function freshPostgres(baseUrl, tag) {
  const name = `plant_store_bench_${process.pid}_${tag}`.replace(/[^a-z0-9_]/g, '_');
  try {
    await query(baseUrl, `DROP DATABASE IF EXISTS ${name}`);
    await query(baseUrl, `CREATE DATABASE ${name}`);
  } catch (error) {
    warn(`PostgreSQL: no fresh database (${error.message}); runs share ${redact(baseUrl)}`);
    return { databaseUrl: baseUrl, idStart: Date.now() * 1000, countRows: null };
  }
  const url = new URL(baseUrl);
  url.pathname = `/${name}`;
  return {
    databaseUrl: url.toString(),
    countRows: async () =>
      Number((await query(url.toString(), 'SELECT count(*) AS n FROM plants')).rows[0].n),
    close: () =>
      query(baseUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch((error) =>
        warn(`PostgreSQL: could not drop ${name}: ${error.message}`),
      ),
  };
}

/**
 * One webhook subscriber for a scenario's `open`: a receiver (bench/receiver.mjs) on the load core
 * that answers every delivery 204 at once. After the load, the deliveries still pending in the
 * outbox, also in seconds of the run's create rate.
 */
export async function webhookSubscriber(_settings, dir) {
  const receiver = await spawnServer('receiver', { dir });
  await receiver.ready();
  return {
    env: {
      WEBHOOK_URLS: `${receiver.url}/hook`,
      WEBHOOK_SECRET: `whsec_${randomBytes(32).toString('base64')}`,
    },
    async afterLoad(result) {
      const db = new Database(join(dir, 'plants.db'), { readonly: true });
      let pending;
      try {
        db.pragma('busy_timeout = 5000');
        pending = db.prepare("SELECT count(*) AS n FROM webhook_deliveries WHERE status = 'pending'").get().n;
      } finally {
        db.close();
      }
      const { received } = JSON.parse((await send(receiver.url, { path: '/count' })).text);
      return { webhook: { pending, received, backlogSeconds: round2(pending / result.donePerSec) } };
    },
    close: () => receiver.stop(),
  };
}
