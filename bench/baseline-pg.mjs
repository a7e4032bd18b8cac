// The PostgreSQL bare baseline: node:http + `pg` Pool(10) for the api's create (bearer auth, exact
// int64 ids, 400/401/409 as Error bodies), one autocommit `INSERT … ON CONFLICT (id) DO NOTHING` per
// request, answered after the server's COMMIT (durable with the default synchronous_commit = on).
// What a careful developer writes by hand.
import { createServer } from 'node:http';
import pg from 'pg';
import { MAX, MIN, readJson, send } from './lib/baseline-http.mjs';

const token = process.env.API_TOKENS ?? 'bench-token';
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
await pool.query('CREATE TABLE IF NOT EXISTS plants (id BIGINT PRIMARY KEY, name TEXT NOT NULL, tag TEXT)');

createServer((req, res) => {
  if (req.headers.authorization !== `Bearer ${token}`) {
    res.setHeader('www-authenticate', 'Bearer');
    return send(res, 401, { error: 401, message: 'Bad token.' });
  }
  if (req.method !== 'POST' || req.url !== '/plants')
    return send(res, 404, { error: 404, message: 'Not found.' });
  readJson(req, res, async ({ id, name, tag }) => {
    if (
      typeof id !== 'bigint' ||
      id < MIN ||
      id > MAX ||
      typeof name !== 'string' ||
      (tag !== undefined && typeof tag !== 'string')
    )
      return send(res, 400, { error: 400, message: 'Not a NewPlant.' });
    try {
      const { rowCount } = await pool.query({
        name: 'insert',
        text: 'INSERT INTO plants (id, name, tag) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING',
        values: [id.toString(), name, tag ?? null],
      });
      if (rowCount === 0) return send(res, 409, { error: 409, message: 'Exists.' });
      send(res, 200, tag === undefined ? { name } : { name, tag });
    } catch {
      send(res, 503, { error: 503, message: 'Unavailable.' });
    }
  });
}).listen(Number(process.env.PORT ?? 3100), '127.0.0.1');
