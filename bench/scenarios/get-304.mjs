// compare scenario `get-304`: GET /plants/{id} with If-None-Match naming the plant's ETag (answered
// 304, no body) on the api over the read store, against the plain GET of `get`.

import { readStore } from '../lib/read-store.mjs';

export default {
  name: 'get-304',
  kind: 'api',
  load: 'get-304',
  against: 'get',
  idMode: 'seq',
  title: () => 'api REST GET /plants/{id} with If-None-Match, 304 (SQLite)',
  open: (settings, { dir }) => readStore(settings, dir),
};
