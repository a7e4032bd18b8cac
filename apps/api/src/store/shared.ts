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
    get: getPlant(db),
    events: eventLog(db, watch),
    deliveries: deliveryOutbox(db),
    tokens: tokenStore(db),
    idempotencyKeys: idempotencyKeys(db),
    webhookEndpoints: webhookEndpoints(db),
  };
}
