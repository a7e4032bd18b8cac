// compare scenario `webhook`: POST /plants on the api (SQLite) with one webhook subscriber, a fast
// receiver on loopback; every create enqueues a delivery in the same transaction, and the worker
// delivers them meanwhile. Reports the outbox backlog when the load stops.

import { webhookSubscriber } from '../lib/webhooks.mjs';

export default {
  name: 'webhook',
  kind: 'api',
  load: 'rest',
  title: () => 'api REST POST /plants, one webhook subscriber (SQLite)',
  open: (_settings, { dir }) => webhookSubscriber(dir),
};
