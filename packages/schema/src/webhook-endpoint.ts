import { z } from 'zod';
import { PLANT_EVENT_TYPES, PlantEventTypeSchema } from './event.ts';

/** Longest endpoint URL, in characters. */
export const MAX_WEBHOOK_URL_LENGTH = 2048;
/** Longest endpoint description, in characters. */
export const MAX_WEBHOOK_DESCRIPTION_LENGTH = 256;
/** Most deliveries one page of `GET /webhook-endpoints/{id}/deliveries` answers. */
export const MAX_DELIVERIES_LIMIT = 100;
export const DEFAULT_DELIVERIES_LIMIT = 20;

const ID_PATTERN = /^we_[0-9a-f]{24}$/;
const DELIVERY_ID_PATTERN = /^msg_[0-9a-f]{32}$/;

const at = (description: string) => z.string().meta({ description, format: 'date-time' });

/** A webhook endpoint's id: `we_` and 24 lowercase hex digits. */
export const WebhookEndpointIdSchema = z
  .string({ error: 'must be a webhook endpoint id (we_ and 24 hex digits)' })
  .regex(ID_PATTERN, { error: 'must be a webhook endpoint id (we_ and 24 hex digits)' })
  .meta({ description: 'The id of the webhook endpoint', example: 'we_5f2b8c1d9e0a4b6c7d8e9f01' });

/** A delivery's id, the Standard Webhooks `webhook-id` it is sent with: `msg_` and 32 hex digits. */
export const WebhookDeliveryIdSchema = z
  .string({ error: 'must be a delivery id (msg_ and 32 hex digits)' })
  .regex(DELIVERY_ID_PATTERN, { error: 'must be a delivery id (msg_ and 32 hex digits)' })
  .meta({ description: 'The id of the delivery: the `webhook-id` header it is sent with' });

/** What a registered endpoint receives when it chooses nothing: new plants only (as before endpoints chose). */
export const DEFAULT_ENDPOINT_EVENTS = ['plant.created'] as const;

/**
 * The event types an endpoint receives: at least one, each at most once, answered in the order of
 * `PLANT_EVENT_TYPES` whatever the order sent.
 */
export const EndpointEventsSchema = z
  .array(PlantEventTypeSchema, { error: 'must be a list of event types' })
  .min(1, { error: 'must list at least one event type' })
  .transform((types) => PLANT_EVENT_TYPES.filter((type) => types.includes(type)))
  .meta({
    description: `The event types delivered to the endpoint (${PLANT_EVENT_TYPES.join(', ')}); default: plant.created only`,
  });

const endpointDescription = z
  .string({ error: 'must be a string' })
  .max(MAX_WEBHOOK_DESCRIPTION_LENGTH, {
    error: `must be at most ${MAX_WEBHOOK_DESCRIPTION_LENGTH} characters`,
  })
  .meta({ description: 'A note for the endpoint’s owner' });

/** An object body with only known fields: `.strict()` reports unknown ones through the object's error too. */
const objectError = (iss: { code: string; keys?: string[] }) =>
  iss.code === 'unrecognized_keys'
    ? `has an unknown field: ${iss.keys!.join(', ')}`
    : 'must be a JSON object';

/** The body that registers an endpoint. */
export const NewWebhookEndpointSchema = z
  .object(
    {
      url: z
        .string({ error: (iss) => (iss.input === undefined ? 'is required' : 'must be a string') })
        .max(MAX_WEBHOOK_URL_LENGTH, { error: `must be at most ${MAX_WEBHOOK_URL_LENGTH} characters` })
        .meta({
          description:
            'Where deliveries are POSTed: an https URL whose host resolves only to public addresses',
          format: 'uri',
        }),
      description: endpointDescription.optional(),
      events: EndpointEventsSchema.optional(),
    },
    { error: objectError },
  )
  .strict()
  .meta({ id: 'NewWebhookEndpoint' });

export type NewWebhookEndpoint = z.input<typeof NewWebhookEndpointSchema>;

/**
 * The body of `PATCH /webhook-endpoints/{id}`, a JSON Merge Patch: what it names changes
 * (`description: null` removes the note), the rest stays.
 */
export const WebhookEndpointPatchSchema = z
  .object(
    {
      events: EndpointEventsSchema.optional(),
      description: endpointDescription.nullable().optional(),
    },
    { error: objectError },
  )
  .strict()
  .meta({ id: 'WebhookEndpointPatch' });

export type WebhookEndpointPatch = z.input<typeof WebhookEndpointPatchSchema>;

/** Input of `webhookEndpoints.update` (REST: the path's id with the body's members). */
export const UpdateWebhookEndpointInputSchema = WebhookEndpointPatchSchema.extend({
  id: WebhookEndpointIdSchema,
});

export type UpdateWebhookEndpointInput = z.input<typeof UpdateWebhookEndpointInputSchema>;

/**
 * Why an endpoint gets no deliveries: its token was revoked (`token_revoked`); the service found its
 * token no longer active, revoked or removed from the configuration (`token_inactive`), or without
 * the `read` scope (`token_lacks_read`); an operator disabled it (`operator`); or it belonged to a
 * token name of an earlier version (`legacy_owner`).
 */
export const WEBHOOK_ENDPOINT_DISABLED_REASONS = [
  'token_revoked',
  'token_inactive',
  'token_lacks_read',
  'operator',
  'legacy_owner',
] as const;

/** Since when and why an endpoint gets no deliveries. */
export const WebhookEndpointDisabledSchema = z
  .object({
    at: at('When the endpoint was disabled (RFC 3339, UTC)'),
    reason: z.enum(WEBHOOK_ENDPOINT_DISABLED_REASONS).meta({
      description:
        'token_revoked: its token was revoked; token_inactive: its token is no longer active (revoked, or ' +
        'removed from the configuration); token_lacks_read: its token lacks the read scope; operator: an ' +
        'operator disabled it; legacy_owner: it belonged to a token name of an earlier version',
    }),
  })
  .meta({ id: 'WebhookEndpointDisabled' });

export type WebhookEndpointDisabled = z.infer<typeof WebhookEndpointDisabledSchema>;

/** A registered endpoint, as reading and listing answer it: never its secret. */
export const WebhookEndpointSchema = z
  .object({
    id: WebhookEndpointIdSchema,
    url: z.string().meta({ description: 'Where deliveries are POSTed' }),
    description: z.string().nullable().meta({ description: 'The note given at registration, or null' }),
    createdAt: at('When the endpoint was registered (RFC 3339, UTC)'),
    events: z.array(PlantEventTypeSchema).meta({ description: 'The event types delivered to the endpoint' }),
    disabled: WebhookEndpointDisabledSchema.nullable().meta({
      description:
        'Null while the endpoint gets deliveries. Otherwise since when and why it gets none: new plants are ' +
        'not sent to it, its pending deliveries were failed, and ping and redeliver answer 409',
    }),
  })
  .meta({ id: 'WebhookEndpoint' });

export type WebhookEndpoint = z.infer<typeof WebhookEndpointSchema>;

const secret = z.string().meta({
  description:
    'The Standard Webhooks signing secret (`whsec_` and base64). Shown in this answer only: keep it.',
  example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
});

/** The answer to registering an endpoint: the endpoint and, this once, its secret. */
export const CreatedWebhookEndpointSchema = WebhookEndpointSchema.extend({ secret }).meta({
  id: 'CreatedWebhookEndpoint',
});

export type CreatedWebhookEndpoint = z.infer<typeof CreatedWebhookEndpointSchema>;

/** The answer to rotating an endpoint's secret. */
export const RotatedWebhookSecretSchema = z
  .object({
    id: WebhookEndpointIdSchema,
    secret,
    previousSecretExpiresAt: at(
      'Until when the previous secret still signs every delivery alongside the new one (RFC 3339, UTC)',
    ),
  })
  .meta({ id: 'RotatedWebhookSecret' });

export type RotatedWebhookSecret = z.infer<typeof RotatedWebhookSecretSchema>;

/** One delivery of an event to an endpoint, with its latest attempt. */
export const WebhookDeliverySchema = z
  .object({
    id: WebhookDeliveryIdSchema,
    event: z.enum([...PLANT_EVENT_TYPES, 'webhook.ping']).meta({ description: 'What was delivered' }),
    status: z.enum(['pending', 'delivered', 'failed']).meta({
      description:
        'pending: not yet delivered and still tried; failed: out of attempts, held back by an open circuit breaker for longer than the retry schedule, or its endpoint was disabled',
    }),
    attempts: z.int32().min(0).meta({ description: 'Attempts made so far' }),
    lastResponseCode: z
      .int32()
      .nullable()
      .meta({ description: 'The HTTP status of the latest attempt, or null (none yet, or no answer)' }),
    lastError: z
      .string()
      .nullable()
      .meta({
        description: 'Why the latest attempt failed, or why the delivery expired (`expired: …`), or null',
      }),
    nextAttemptAt: at('When the next attempt is due, or null when none is (delivered or failed)').nullable(),
    createdAt: at('When the delivery was enqueued (RFC 3339, UTC)'),
  })
  .meta({ id: 'WebhookDelivery' });

export type WebhookDelivery = z.infer<typeof WebhookDeliverySchema>;

/** Path parameters of `/webhook-endpoints/{id}…`. */
export const WebhookEndpointParamsSchema = z.object({ id: WebhookEndpointIdSchema });

/** Path parameters of `/webhook-endpoints/{id}/deliveries/{deliveryId}/redeliver`. */
export const WebhookDeliveryParamsSchema = z.object({
  id: WebhookEndpointIdSchema,
  deliveryId: WebhookDeliveryIdSchema,
});

/** Query of `GET /webhook-endpoints/{id}/deliveries`: newest first, a page at a time. */
export const ListDeliveriesQuerySchema = z.object({
  id: WebhookEndpointIdSchema,
  limit: z
    .int32({ error: `must be an integer from 1 to ${MAX_DELIVERIES_LIMIT}` })
    .min(1)
    .max(MAX_DELIVERIES_LIMIT)
    .default(DEFAULT_DELIVERIES_LIMIT)
    .meta({ format: 'int32', description: 'The maximum number of deliveries to return' }),
  before: WebhookDeliveryIdSchema.optional().meta({
    description: 'Cursor: answer only deliveries enqueued before this one (the last id of the previous page)',
  }),
});

export type ListDeliveriesQuery = z.input<typeof ListDeliveriesQuerySchema>;
