// compare scenario `postgres` (only with BENCH_DATABASE_URL): POST /plants on the api with the
// PostgreSQL store, a fresh database per run.

import { freshPostgres } from '../lib/postgres.mjs';

export default {
  name: 'postgres',
  kind: 'api',
  load: 'rest',
  title: () => 'api REST POST /plants (PostgreSQL)',
  /** The store of one run, in place of the SQLite file in the run's directory. */
  async openStore(settings, round) {
    const pg = await freshPostgres(settings.databaseUrl, `${round}`);
    return { databaseUrl: pg.url, idStart: pg.idStart, countRows: pg.count, close: pg.drop };
  },
};
