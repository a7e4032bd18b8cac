// compare scenario `get-unsampled`: `get` with tracing configured but no trace sampled, against `get`.

import { readStore } from '../lib/read-store.mjs';
import { unsampledTracing } from '../lib/tracing.mjs';

export default {
  name: 'get-unsampled',
  kind: 'api',
  load: 'get',
  against: 'get',
  idMode: 'seq',
  title: () => 'api REST GET /plants/{id}, tracing configured, unsampled (SQLite)',
  open: async (settings, { dir }) => ({ ...(await readStore(settings, dir)), ...unsampledTracing() }),
};
