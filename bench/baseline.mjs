// The baseline for `pnpm bench`: the smallest correct node:http + better-sqlite3 server for the
// POST /plants contract (bearer auth, exact int64 ids, 400/401/409 as Error bodies), with WAL and
// synchronous=NORMAL, so commits are not fsync'd before the answer, and for the reads
// GET /plants/{id} (404 when absent) and GET /plants?limit=N (ascending ids, a Link header while
// more remain), answered by prepared statements and a JSON writer for the one row shape. It marks
// the ceiling one Node process reaches; the api must come close to it.
import { createServer } from 'node:http';
import { readJson, readNewPlant, send } from './lib/baseline-http.mjs';
import { idOfPath, openStore, plantJson } from './lib/baseline-sqlite.mjs';

const port = Number(process.env.PORT ?? 3100);
const token = process.env.API_TOKENS ?? 'bench-token';
const { insert, get, list, rename } = openStore(process.env.DATABASE_FILE ?? 'baseline.db');

/** PATCH /plants/{id} with `{"name": …}`: one UPDATE, then the plant as it is now (200), or 404. */
function patch(req, res) {
  const { id, status, message } = idOfPath(new URL(req.url, 'http://x').pathname);
  if (id === undefined) return send(res, status, { error: status, message });
  readJson(req, res, (body) => {
    if (typeof body?.name !== 'string') return send(res, 400, { error: 400, message: 'Bad name.' });
    const row = rename.get(body.name, id);
    if (row === undefined) return send(res, 404, { error: 404, message: 'No such plant.' });
    sendJson(res, plantJson(row));
  });
}

function sendJson(res, text, headers) {
  res.writeHead(200, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

function read(req, res) {
  const url = new URL(req.url, 'http://x');
  if (url.pathname === '/plants') {
    const limit = Number(url.searchParams.get('limit') ?? 20);
    if (!Number.isInteger(limit) || limit < 1 || limit > 100)
      return send(res, 400, { error: 400, message: 'Bad limit.' });
    const rows = list.all(limit + 1);
    const page = rows.slice(0, limit);
    const headers =
      rows.length > limit ? { link: `</plants?limit=${limit}&after=${page[limit - 1].id}>; rel="next"` } : {};
    return sendJson(res, `[${page.map(plantJson).join(',')}]`, headers);
  }
  const { id, status, message } = idOfPath(url.pathname);
  if (id === undefined) return send(res, status, { error: status, message });
  const row = get.get(id);
  if (row === undefined) return send(res, 404, { error: 404, message: 'No such plant.' });
  sendJson(res, plantJson(row));
}

createServer((req, res) => {
  if (req.headers.authorization !== `Bearer ${token}`) {
    res.setHeader('www-authenticate', 'Bearer');
    return send(res, 401, { error: 401, message: 'Bad token.' });
  }
  if (req.method === 'GET' && req.url.startsWith('/plants')) return read(req, res);
  if (req.method === 'PATCH' && req.url.startsWith('/plants/')) return patch(req, res);
  if (req.method !== 'POST' || req.url !== '/plants')
    return send(res, 404, { error: 404, message: 'Not found.' });
  readNewPlant(req, res, ({ id, name, tag }) => {
    if (insert.run(id, name, tag ?? null).changes === 0)
      return send(res, 409, { error: 409, message: 'Exists.' });
    send(res, 200, tag === undefined ? { name } : { name, tag });
  });
}).listen(port, '127.0.0.1');
