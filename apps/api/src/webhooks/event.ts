import { randomUUID } from 'node:crypto';
import { type NewPlant, plantFieldsOf, stringifyJson } from '@plant-store/schema';
import type { NewDelivery } from '../store/contract.ts';

/** The new-plant webhook's subscribers, as the create operation sees them. */
export type NewPlantWebhook = {
  /**
   * The outbox rows a create of `plant` writes with it: one delivery per subscriber URL, of
   * `payload` (its `newPlantPayload`, computed here when not given).
   */
  deliveriesFor(plant: NewPlant, payload?: string): readonly NewDelivery[];
};

const NO_DELIVERIES: readonly NewDelivery[] = Object.freeze([]);

/** The new-plant webhook to `urls` (`WEBHOOK_URLS`); with none, every create enqueues nothing. */
export function newPlantWebhook(urls: readonly string[] = []): NewPlantWebhook {
  if (urls.length === 0) return { deliveriesFor: () => NO_DELIVERIES };
  return {
    deliveriesFor(plant, payload = newPlantPayload(plant)) {
      return urls.map((url) => ({ id: newWebhookId(), url, payload }));
    },
  };
}

/** The new-plant webhook's body: the `NewPlant` that was added, its id an exact JSON integer. */
export function newPlantPayload(plant: NewPlant): string {
  return stringifyJson(Object.assign({ id: plant.id }, plantFieldsOf(plant)));
}

/**
 * A new Standard Webhooks `webhook-id`, one per delivery, kept for all of its attempts: `msg_`, the
 * time in milliseconds (12 hex digits), then 20 random ones (80 bits less the UUID's version digit).
 * Time first, so the outbox's primary key grows at its end: a random key put every delivery on a
 * random page of that index, and a group commit wrote hundreds of pages to the log.
 */
export function newWebhookId(): string {
  return `msg_${Date.now().toString(16).padStart(12, '0')}${randomUUID().replaceAll('-', '').slice(12)}`;
}
