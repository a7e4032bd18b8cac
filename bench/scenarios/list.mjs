// compare scenario `list`: GET /plants?limit=100 on the api over the read store, against
// `baseline-list`.

import { readStore } from '../lib/read-store.mjs';
import { LIST_LIMIT } from '../lib/workload.mjs';

export default {
  name: 'list',
  kind: 'api',
  load: 'list',
  against: 'baseline-list',
  idMode: 'seq',
  title: () => `api REST GET /plants?limit=${LIST_LIMIT} (SQLite)`,
  open: (settings, { dir }) => readStore(settings, dir),
};
