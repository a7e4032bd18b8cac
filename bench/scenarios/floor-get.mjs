// compare scenario `floor-get`: GET /plants/{id} on bench/koa-floor.mjs over the read store (the
// baseline's read through Koa, nothing else), against `baseline-get`.

import { readStore } from '../lib/read-store.mjs';

export default {
  name: 'floor-get',
  kind: 'baseline-koa',
  load: 'get',
  against: 'baseline-get',
  idMode: 'seq',
  title: () => 'Koa floor: the baseline GET /plants/{id} through Koa (no log, metrics or rate limit)',
  open: (settings, { dir }) => readStore(settings, dir),
};
