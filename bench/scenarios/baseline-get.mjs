// compare scenario `baseline-get`: GET /plants/{id} on bench/baseline.mjs over the read store.

import { readStore } from '../lib/read-store.mjs';

export default {
  name: 'baseline-get',
  kind: 'baseline',
  load: 'get',
  idMode: 'seq',
  title: () => 'baseline: GET /plants/{id} (node:http + better-sqlite3)',
  open: (settings, { dir }) => readStore(settings, dir),
};
