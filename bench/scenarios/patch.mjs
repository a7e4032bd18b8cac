// compare scenario `patch`: PATCH /plants/{id} (a new name each time, so each is a new version with
// its event, fdatasync'd before the answer) on the api over the read store, against `baseline-patch`.

import { readStore } from '../lib/read-store.mjs';

export default {
  name: 'patch',
  kind: 'api',
  load: 'patch',
  against: 'baseline-patch',
  idMode: 'seq',
  title: () => 'api REST PATCH /plants/{id} (SQLite)',
  open: (settings, { dir }) => readStore(settings, dir),
};
