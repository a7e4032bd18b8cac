import { randomUUID } from 'node:crypto';
import { type NewPlant, stringifyJson } from '@plant-store/schema';

/** The new-plant webhook's body: the `NewPlant` that was added, its id an exact JSON integer. */
export function newPlantPayload({ id, name, tag }: NewPlant): string {
  return stringifyJson(tag === undefined ? { id, name } : { id, name, tag });
}

/** A new Standard Webhooks `webhook-id`, one per delivery, kept for all of its attempts. */
export function newWebhookId(): string {
  return `msg_${randomUUID().replaceAll('-', '')}`;
}
