// compare scenario `rest-traced`: `rest` with every span exported to a local OTLP collector, against `rest`.

import { exportedTracing } from '../lib/tracing.mjs';

export default {
  name: 'rest-traced',
  kind: 'api',
  load: 'rest',
  against: 'rest',
  title: () => 'api REST POST /plants, every span exported over OTLP (SQLite)',
  open: (_settings, { dir }) => exportedTracing(dir),
};
