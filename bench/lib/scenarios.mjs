// The scenarios of `compare`, in the order of the report. Each names its server (the api unless
// said), its load (lib/workload.mjs), the scenario its ratios are against (`against`: a bare
// baseline, or another api scenario), the least ratio it targets, and how to `open` its store:
// (settings, dir, round) → { databaseUrl, env, idStart, idModulo, countRows, afterLoad, close }.
import { freshPostgres, jwtReadStore, readStore, taggedStore, webhookSubscriber } from './stores.mjs';

const postgres = (prefix) => (settings, _dir, round) =>
  freshPostgres(settings.databaseUrl, `${prefix}${round}`);
const bare = (load, title, open) => ({ server: 'baseline', load, title, open });
const api = (load, against, target, title, open) => ({ load, against, target, title, open });

export const SCENARIOS = {
  baseline: bare('rest', 'bare node:http + better-sqlite3: POST /plants'),
  rest: api('rest', 'baseline', 0.75, 'REST POST /plants (SQLite)'),
  trpc: api('trpc', 'baseline', 0.55, 'tRPC plants.create, one call a request'),
  'trpc-batch': api('trpc-batch', 'baseline', 0.9, 'tRPC plants.create, batched'),
  webhook: api('rest', 'baseline', 0.55, 'REST POST /plants, one webhook subscriber', webhookSubscriber),
  'baseline-get': bare('get', 'bare: GET /plants/{id}', readStore),
  get: api('get', 'baseline-get', 0.65, 'REST GET /plants/{id}', readStore),
  // A GET with a JWT access token costs at most 1.3× one with an opaque token (issue 43): ≥ 1/1.3.
  'get-jwt': api('get', 'get', 0.77, 'REST GET /plants/{id} with a JWT access token', jwtReadStore),
  'get-304': api('get-304', 'get', 1, 'GET /plants/{id}, If-None-Match → 304', readStore),
  'baseline-list': bare('list', 'bare: GET /plants?limit=100', readStore),
  list: api('list', 'baseline-list', 0.65, 'REST GET /plants?limit=100', readStore),
  'list-big': api('list', 'list-big', undefined, 'GET /plants?limit=100, 1M plants', taggedStore),
  'list-tag': api('list-tag', 'list-big', 0.8, 'GET /plants?limit=100&tag=t3, 1M plants', taggedStore),
  'baseline-patch': bare('patch', 'bare: PATCH /plants/{id}', readStore),
  patch: api('patch', 'baseline-patch', 0.55, 'REST PATCH /plants/{id}', readStore),
  'baseline-pg': {
    ...bare('rest', 'bare node:http + pg: POST /plants', postgres('base_')),
    server: 'baseline-pg',
  },
  postgres: api('rest', 'baseline-pg', 1.2, 'REST POST /plants (PostgreSQL)', postgres('')),
};
for (const [name, s] of Object.entries(SCENARIOS)) {
  s.against ??= name;
  s.postgres = s.against === 'baseline-pg';
}

/** Those asked for (all by default, those on PostgreSQL only with a database), each with its baseline. */
export function resolveScenarios(settings) {
  const all = Object.keys(SCENARIOS);
  const wanted = settings.scenarios ?? all.filter((n) => settings.databaseUrl || !SCENARIOS[n].postgres);
  for (const name of wanted) {
    if (!SCENARIOS[name]) throw new Error(`unknown scenario ${name} (${all.join(', ')})`);
    if (SCENARIOS[name].postgres && !settings.databaseUrl)
      throw new Error(`the ${name} scenario needs PostgreSQL (BENCH_DATABASE_URL=postgres://…)`);
  }
  const names = new Set(wanted.flatMap((name) => [SCENARIOS[name].against, name]));
  return all.filter((name) => names.has(name));
}
