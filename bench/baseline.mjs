// The bare baseline: the smallest correct node:http + better-sqlite3 server for the api's create,
// read, page and rename (bearer auth, exact int64 ids, 400/401/404/409 as Error bodies), with WAL and
// synchronous=NORMAL, so that commits are not fsync'd before the answer; prepared statements and a
// JSON writer for the one row shape. It marks the ceiling one Node process reaches on one core.
import { createServer } from 'node:http';
import Database from 'better-sqlite3';
import { MAX, MIN, readJson, send } from './lib/baseline-http.mjs';

const token = process.env.API_TOKENS ?? 'bench-token';
const db = new Database(process.env.DATABASE_FILE ?? 'baseline.db');
db.pragma('journal_mode = WAL');
db.pragma('synchronous = NORMAL');
db.exec('CREATE TABLE IF NOT EXISTS plants (id INTEGER PRIMARY KEY, name TEXT NOT NULL, tag TEXT)');
const insert = db.prepare('INSERT INTO plants (id, name, tag) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING');
const get = db.prepare('SELECT id, name, tag FROM plants WHERE id = ?').safeIntegers(true);
const page = db.prepare('SELECT id, name, tag FROM plants ORDER BY id LIMIT ?').safeIntegers(true);
const rename = db
  .prepare('UPDATE plants SET name = ? WHERE id = ? RETURNING id, name, tag')
  .safeIntegers(true);

const plantJson = (row) =>
  `{"id":${row.id},"name":${JSON.stringify(row.name)}${row.tag === null ? '' : `,"tag":${JSON.stringify(row.tag)}`}}`;

function sendJson(res, text, headers) {
  res.writeHead(200, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

/** The id of `/plants/<id>`, or undefined after answering 404 or 400 itself. */
function idOf(res, pathname) {
  const id = /^\/plants\/(-?\d{1,19})$/.exec(pathname)?.[1];
  if (id === undefined) return void send(res, 404, { error: 404, message: 'Not found.' });
  if (BigInt(id) < MIN || BigInt(id) > MAX) return void send(res, 400, { error: 400, message: 'Bad id.' });
  return BigInt(id);
}

function route(req, res) {
  if (req.method === 'POST' && req.url === '/plants')
    return readJson(req, res, ({ id, name, tag }) => {
      if (
        typeof id !== 'bigint' ||
        id < MIN ||
        id > MAX ||
        typeof name !== 'string' ||
        (tag !== undefined && typeof tag !== 'string')
      )
        return send(res, 400, { error: 400, message: 'Not a NewPlant.' });
      if (insert.run(id, name, tag ?? null).changes === 0)
        return send(res, 409, { error: 409, message: 'Exists.' });
      send(res, 200, tag === undefined ? { name } : { name, tag });
    });
  const url = new URL(req.url, 'http://x');
  if (req.method === 'GET' && url.pathname === '/plants') {
    const limit = Number(url.searchParams.get('limit') ?? 20);
    if (!Number.isInteger(limit) || limit < 1 || limit > 100)
      return send(res, 400, { error: 400, message: 'Bad limit.' });
    const rows = page.all(limit + 1);
    const more =
      rows.length > limit ? { link: `</plants?limit=${limit}&after=${rows[limit - 1].id}>; rel="next"` } : {};
    return sendJson(res, `[${rows.slice(0, limit).map(plantJson).join(',')}]`, more);
  }
  const id = idOf(res, url.pathname);
  if (id === undefined) return;
  if (req.method === 'GET') {
    const row = get.get(id);
    return row ? sendJson(res, plantJson(row)) : send(res, 404, { error: 404, message: 'No such plant.' });
  }
  if (req.method !== 'PATCH') return send(res, 405, { error: 405, message: 'Method not allowed.' });
  readJson(req, res, (body) => {
    if (typeof body?.name !== 'string') return send(res, 400, { error: 400, message: 'Bad name.' });
    const row = rename.get(body.name, id);
    return row ? sendJson(res, plantJson(row)) : send(res, 404, { error: 404, message: 'No such plant.' });
  });
}

createServer((req, res) => {
  if (req.headers.authorization !== `Bearer ${token}`) {
    res.setHeader('www-authenticate', 'Bearer');
    return send(res, 401, { error: 401, message: 'Bad token.' });
  }
  route(req, res);
}).listen(Number(process.env.PORT ?? 3100), '127.0.0.1');
