import { deliveryOutbox } from './delivery-outbox.ts';
import { webhookEndpoints } from './endpoint-rows.ts';
import { eventLog } from './event-log.ts';
import { idempotencyKeys } from './idempotency-keys.ts';
import { getPlant } from './plant-rows.ts';
import { principalStore } from './principal-rows.ts';
import { type Db, statements } from './sql.ts';
import { tokenStore } from './token-rows.ts';
import type { PlantStore, Watch } from './contract.ts';

const SQL = statements('store', { ping: 'SELECT 1' });

/** The parts of `PlantStore` both stores share, over their engine's `Db` and `watch`. */
export type SharedParts = Pick<
  PlantStore,
  'ping' | 'get' | 'events' | 'deliveries' | 'tokens' | 'principals' | 'idempotencyKeys' | 'webhookEndpoints'
>;

/** What both stores share of `PlantStore`, over their engine's `Db` and `watch`. */
export function sharedParts(db: Db, watch: Watch): SharedParts {
  return {
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
