// compare scenario `baseline-pg` (only with PostgreSQL): POST /plants on bench/baseline-pg.mjs, a
// hand-written node:http + pg Pool(10) server, a fresh database per run.

import { freshPostgres } from '../lib/postgres.mjs';

export default {
  name: 'baseline-pg',
  kind: 'baseline-pg',
  load: 'rest',
  postgres: true,
  title: () => 'baseline: node:http + pg Pool(10), INSERT … ON CONFLICT DO NOTHING',
  async open(settings, { round }) {
    const pg = await freshPostgres(settings.databaseUrl, `base_${round}`);
    return { databaseUrl: pg.url, idStart: pg.idStart, countRows: pg.count, close: pg.drop };
  },
};
