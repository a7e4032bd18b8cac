// compare scenario `baseline-list`: GET /plants?limit=100 on bench/baseline.mjs over the read store.

import { readStore } from '../lib/read-store.mjs';
import { LIST_LIMIT } from '../lib/workload.mjs';

export default {
  name: 'baseline-list',
  kind: 'baseline',
  load: 'list',
  idMode: 'seq',
  title: () => `baseline: GET /plants?limit=${LIST_LIMIT} (node:http + better-sqlite3)`,
  open: (settings, { dir }) => readStore(settings, dir),
};
