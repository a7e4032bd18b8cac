// compare scenario `baseline-patch`: PATCH /plants/{id} (a new name) on bench/baseline.mjs over the
// read store: one UPDATE … RETURNING, as the create baseline commits (WAL, synchronous=NORMAL).

import { readStore } from '../lib/read-store.mjs';

export default {
  name: 'baseline-patch',
  kind: 'baseline',
  load: 'patch',
  idMode: 'seq',
  title: () => 'baseline: PATCH /plants/{id} (node:http + better-sqlite3 UPDATE)',
  open: (settings, { dir }) => readStore(settings, dir),
};
