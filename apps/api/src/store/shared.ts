import { deliveryOutbox } from './deliveries.ts';
import { webhookEndpoints } from './endpoints.ts';
import { eventLog, type Watch } from './events.ts';
import { idempotencyKeys } from './idempotency-keys.ts';
import { getPlant } from './plants.ts';
import type { Db } from './sql.ts';
import { tokenStore } from './tokens.ts';

/** What both stores share of `PlantStore`, over their engine's `Db` and `watch`. */
export function sharedParts(db: Db, watch: Watch) {
  return {
    /** The plant with this id, or `undefined`. */
    get: getPlant(db),
    /** The log of committed changes that `create` and `delete` append to. */
    events: eventLog(db, watch),
    /** The webhook outbox that `create` fills and the delivery worker drains. */
    deliveries: deliveryOutbox(db),
    /** Bearer tokens issued with `main.js token create`, kept only as SHA-256 digests. */
    tokens: tokenStore(db),
    /** Idempotency-Key claims and the answers stored with them (see idempotency.ts). */
    idempotencyKeys: idempotencyKeys(db),
    /** Webhook endpoints registered by tokens, with their sealed secrets. */
    webhookEndpoints: webhookEndpoints(db),
  };
}
