// compare scenario `list-big`: GET /plants?limit=100 on the api over the tagged store (1,000,000
// plants), the unfiltered page `list-tag` is compared with.

import { taggedStore } from '../lib/read-store.mjs';
import { BIG_ROWS, LIST_LIMIT } from '../lib/workload.mjs';

export default {
  name: 'list-big',
  kind: 'api',
  load: 'list',
  against: 'list-big',
  idMode: 'seq',
  title: () => `api REST GET /plants?limit=${LIST_LIMIT}, ${BIG_ROWS.toLocaleString('en')} plants (SQLite)`,
  open: (settings, { dir }) => taggedStore(settings, dir),
};
