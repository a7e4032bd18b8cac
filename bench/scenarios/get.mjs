// compare scenario `get`: GET /plants/{id} on the api over the read store, against `baseline-get`.

import { readStore } from '../lib/read-store.mjs';

export default {
  name: 'get',
  kind: 'api',
  load: 'get',
  against: 'baseline-get',
  idMode: 'seq',
  title: () => 'api REST GET /plants/{id} (SQLite)',
  open: (settings, { dir }) => readStore(settings, dir),
};
