// compare scenario `postgres` (only with PostgreSQL): POST /plants on the api with the PostgreSQL
// store, a fresh database per run, against `baseline-pg`.

import { freshPostgres } from '../lib/postgres.mjs';

export default {
  name: 'postgres',
  kind: 'api',
  load: 'rest',
  against: 'baseline-pg',
  postgres: true,
  title: () => 'api REST POST /plants (PostgreSQL)',
  async open(settings, { round }) {
    const pg = await freshPostgres(settings.databaseUrl, `${round}`);
    return { databaseUrl: pg.url, idStart: pg.idStart, countRows: pg.count, close: pg.drop };
  },
};
