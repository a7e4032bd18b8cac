// The Koa floor of `pnpm bench`: the bare baseline's POST /plants and GET /plants/{id} (the same
// SQLite store, statements, body parsing and JSON writer: bench/lib/baseline-*.mjs) answered
// through Koa, the framework the api is built on, as a Koa app would: one middleware per concern
// the api has before its routes (request id and security headers, errors, token check), then the
// route. No access log, metrics, rate limit, validation library or durable commit: it measures what
// the framework alone leaves of the bare baseline, so the report can tell the framework's share of
// the api's gap from the api's own.
//
// With KOA_FLOOR_GUARANTEES=1 it keeps the guarantees the api keeps on every request (request id,
// access log line, metrics, rate limit: bench/lib/floor-guarantees.mjs), each done the direct way.
import Koa from 'koa';
import { parseNewPlant } from './lib/baseline-http.mjs';
import { idOfPath, openStore, plantJson } from './lib/baseline-sqlite.mjs';

const port = Number(process.env.PORT ?? 3100);
const token = process.env.API_TOKENS ?? 'bench-token';
const guarantees = process.env.KOA_FLOOR_GUARANTEES === '1';
// Loaded only when kept: the plain floor loads nothing more than it did.
const { observe, rateLimit } = guarantees ? await import('./lib/floor-guarantees.mjs') : {};
const { insert, get } = openStore(process.env.DATABASE_FILE ?? 'baseline.db');

class Answer extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

function readText(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

const app = new Koa();
if (guarantees) app.use(observe());
else
  app.use(async (ctx, next) => {
    ctx.set('X-Request-Id', ctx.get('x-request-id') || '-');
    ctx.set('X-Content-Type-Options', 'nosniff');
    await next();
  });
app.use(async (ctx, next) => {
  try {
    await next();
  } catch (error) {
    if (!(error instanceof Answer)) throw error;
    ctx.status = error.status;
    ctx.body = JSON.stringify({ error: error.status, message: error.message });
    ctx.type = 'application/json';
  }
});
app.use((ctx, next) => {
  if (ctx.get('authorization') !== `Bearer ${token}`) {
    ctx.set('WWW-Authenticate', 'Bearer');
    throw new Answer(401, 'Bad token.');
  }
  return next();
});
if (guarantees) app.use(rateLimit('bench'));
app.use(async (ctx) => {
  ctx.type = 'application/json';
  if (ctx.method === 'POST' && ctx.path === '/plants') {
    const { plant, error } = parseNewPlant(await readText(ctx.req));
    if (error) throw new Answer(400, error);
    const { id, name, tag } = plant;
    if (insert.run(id, name, tag ?? null).changes === 0) throw new Answer(409, 'Exists.');
    ctx.body = JSON.stringify(tag === undefined ? { name } : { name, tag });
    return;
  }
  if (ctx.method !== 'GET') throw new Answer(404, 'Not found.');
  const { id, status, message } = idOfPath(ctx.path);
  if (id === undefined) throw new Answer(status, message);
  const row = get.get(id);
  if (row === undefined) throw new Answer(404, 'No such plant.');
  ctx.body = plantJson(row);
});
app.listen(port, '127.0.0.1');
