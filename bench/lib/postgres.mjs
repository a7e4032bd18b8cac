// PostgreSQL for the `postgres` scenario: a fresh database per run when the URL's role may create
// one, dropped afterwards.

import { warn } from './session.mjs';

export async function freshPostgres(baseUrl, tag) {
  const { default: pg } = await import('pg');
  const name = `plant_store_bench_${process.pid}_${tag}`.replace(/[^a-z0-9_]/g, '_');
  const admin = new pg.Client({ connectionString: baseUrl });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${name}`);
    await admin.query(`CREATE DATABASE ${name}`);
  } catch (error) {
    await admin.end();
    warn(`PostgreSQL: could not create a fresh database (${error.message}); runs share ${redact(baseUrl)}`);
    return {
      url: baseUrl,
      // Ids above anything earlier runs of this kind used.
      idStart: Date.now() * 1000,
      count: undefined,
      drop: async () => {},
    };
  }
  await admin.end();
  const url = new URL(baseUrl);
  url.pathname = `/${name}`;
  const withClient = async (connectionString, query) => {
    const client = new pg.Client({ connectionString });
    await client.connect();
    try {
      return await client.query(query);
    } finally {
      await client.end();
    }
  };
  return {
    url: url.toString(),
    idStart: 0,
    count: async () => {
      try {
        return Number((await withClient(url.toString(), 'SELECT count(*) AS n FROM plants')).rows[0].n);
      } catch {
        return undefined;
      }
    },
    drop: async () => {
      try {
        await withClient(baseUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } catch (error) {
        warn(`PostgreSQL: could not drop ${name}: ${error.message}`);
      }
    },
  };
}

/** The URL with its password hidden, for the report. */
export function redact(url) {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return 'the given URL';
  }
}

/** The server `pnpm bench` uses when BENCH_DATABASE_URL is unset: the local one, if it answers. */
export const DEFAULT_POSTGRES_URL = 'postgres://postgres@127.0.0.1:5432/postgres';

/** Whether a PostgreSQL server answers at `url` within a second. */
export async function postgresAnswers(url) {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}
