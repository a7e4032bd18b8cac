// compare scenario `rest-unsampled`: `rest` with tracing configured but no trace sampled, against `rest`.

import { unsampledTracing } from '../lib/tracing.mjs';

export default {
  name: 'rest-unsampled',
  kind: 'api',
  load: 'rest',
  against: 'rest',
  title: () => 'api REST POST /plants, tracing configured, unsampled (SQLite)',
  open: () => unsampledTracing(),
};
