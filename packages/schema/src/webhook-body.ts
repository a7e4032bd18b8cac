import { z } from 'zod';
import { CHANGED_DESCRIPTION } from './event.ts';
import { PLANT_FIELD_NAMES, PlantIdSchema, PlantWithIdSchema } from './plant.ts';
import { WebhookEndpointIdSchema } from './webhook-endpoint.ts';

/**
 * The bodies webhooks are POSTed with, one per `webhook-event` type. A `plant.created` delivery's
 * body is the `NewPlant` that was created (`NewPlantSchema`).
 */

/** `plant.updated`: the plant after the change (`PlantWithId`), and which fields changed. */
export const PlantUpdatedWebhookSchema = PlantWithIdSchema.extend({
  changed: z.array(z.enum(PLANT_FIELD_NAMES)).min(1).meta({ description: CHANGED_DESCRIPTION }),
}).meta({ id: 'PlantUpdatedWebhook' });

export type PlantUpdatedWebhook = z.infer<typeof PlantUpdatedWebhookSchema>;

/** `plant.deleted`: the id of the plant that was deleted. */
export const PlantDeletedWebhookSchema = z.object({ id: PlantIdSchema }).meta({ id: 'PlantDeletedWebhook' });

export type PlantDeletedWebhook = z.infer<typeof PlantDeletedWebhookSchema>;

/** `webhook.ping`: the test event `POST /webhook-endpoints/{id}/ping` enqueues. */
export const WebhookPingSchema = z
  .object({
    type: z.literal('webhook.ping'),
    endpointId: WebhookEndpointIdSchema,
    timestamp: z
      .string()
      .meta({ description: 'When the ping was enqueued (RFC 3339, UTC)', format: 'date-time' }),
  })
  .meta({ id: 'WebhookPing' });

export type WebhookPing = z.infer<typeof WebhookPingSchema>;
