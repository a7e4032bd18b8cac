import { deliveryOutbox } from './delivery-outbox.ts';
import { webhookEndpoints } from './endpoint-rows.ts';
import { eventLog, type Watch } from './event-log.ts';
import { idempotencyKeys } from './idempotency-keys.ts';
import { getPlant } from './plant-rows.ts';
import { principalStore } from './principal-rows.ts';
import { type Db, statements } from './sql.ts';
import { tokenStore } from './token-rows.ts';

const SQL = statements('store', { ping: 'SELECT 1' });

/** What both stores share of `PlantStore`, over their engine's `Db` and `watch`. */
export function sharedParts(db: Db, watch: Watch) {
  return {
    /** Resolves once the store answers a query (SQLite: after the commit in flight is durable). */
    ping: async () => void (await db.all(SQL.ping)),
    get: getPlant(db),
    events: eventLog(db, watch),
    deliveries: deliveryOutbox(db),
    tokens: tokenStore(db),
    principals: principalStore(db),
    idempotencyKeys: idempotencyKeys(db),
    webhookEndpoints: webhookEndpoints(db),
  };
}
