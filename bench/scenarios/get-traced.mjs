// compare scenario `get-traced`: `get` with every span exported to a local OTLP collector, against `get`.

import { readStore } from '../lib/read-store.mjs';
import { exportedTracing } from '../lib/tracing.mjs';

export default {
  name: 'get-traced',
  kind: 'api',
  load: 'get',
  against: 'get',
  idMode: 'seq',
  title: () => 'api REST GET /plants/{id}, every span exported over OTLP (SQLite)',
  open: async (settings, { dir }) => ({
    ...(await readStore(settings, dir)),
    ...(await exportedTracing(dir)),
  }),
};
