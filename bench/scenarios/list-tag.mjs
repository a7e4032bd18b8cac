// compare scenario `list-tag`: GET /plants?limit=100&tag=t3 on the api over the tagged store
// (1,000,000 plants in 10 tags), against the unfiltered page of `list-big` on the same store.

import { taggedStore } from '../lib/read-store.mjs';
import { BIG_ROWS, LIST_LIMIT, LIST_TAG, TAGS } from '../lib/workload.mjs';

export default {
  name: 'list-tag',
  kind: 'api',
  load: 'list-tag',
  against: 'list-big',
  idMode: 'seq',
  title: () =>
    `api REST GET /plants?limit=${LIST_LIMIT}&tag=${LIST_TAG}, ${BIG_ROWS.toLocaleString('en')} plants in ${TAGS} tags (SQLite)`,
  open: (settings, { dir }) => taggedStore(settings, dir),
};
