import { z } from 'zod';
import { PLANT_FIELDS } from './event.ts';
import { PlantIdSchema, PlantWithIdSchema } from './plant.ts';
import { WebhookEndpointIdSchema } from './webhook-endpoint.ts';

/**
 * The bodies webhooks are POSTed with, one per `webhook-event` type. A `plant.created` delivery's
 * body is the `NewPlant` that was created (`NewPlantSchema`).
 */

/** `plant.updated`: the plant after the change (`PlantWithId`), and which fields changed. */
export const PlantUpdatedWebhookSchema = PlantWithIdSchema.extend({
  changed: z
    .array(z.enum(PLANT_FIELDS))
    .min(1)
    .meta({ description: 'The fields whose value changed, in the order name, tag (never empty)' }),
}).meta({ id: 'PlantUpdatedWebhook' });

export type PlantUpdatedWebhook = z.infer<typeof PlantUpdatedWebhookSchema>;

/** `plant.deleted`: the id of the plant that was deleted. */
export const PlantDeletedWebhookSchema = z
  .object({ id: PlantIdSchema })
  .meta({ id: 'PlantDeletedWebhook' });

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
