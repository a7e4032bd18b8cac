// compare scenario `floor-get-kept`: `floor-get` keeping the guarantees the api keeps on every
// request (KOA_FLOOR_GUARANTEES=1: request id, access log line, metrics, rate limit), against
// `floor-get`: what those guarantees alone cost a read through Koa, done the direct way.

import { readStore } from '../lib/read-store.mjs';

export default {
  name: 'floor-get-kept',
  kind: 'baseline-koa',
  load: 'get',
  against: 'floor-get',
  idMode: 'seq',
  title: () => 'Koa floor GET /plants/{id} with a request id, access log, metrics and rate limit',
  open: async (settings, { dir }) => ({
    ...(await readStore(settings, dir)),
    env: { KOA_FLOOR_GUARANTEES: '1' },
  }),
};
