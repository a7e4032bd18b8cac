import { z } from 'zod';
import { stringifyJson } from './json.ts';
import { PLANT_FIELD_NAMES, PlantIdSchema, PlantWithIdSchema } from './plant.ts';

/** An event's position in the log: a signed 64-bit integer that only grows. */
export const EventIdSchema = z
  .int64({ error: 'must be an event id (a non-negative 64-bit integer)' })
  .min(0n, { error: 'must be an event id (a non-negative 64-bit integer)' })
  .meta({
    description: 'The position of the event in the log; each event has a greater id than every earlier one',
    minimum: 0,
  });

const at = z.string().meta({ description: 'When the change committed (RFC 3339, UTC)', format: 'date-time' });

/** A plant was created: the plant as stored. */
export const PlantCreatedEventSchema = z
  .object({ id: EventIdSchema, type: z.literal('plant.created'), createdAt: at, plant: PlantWithIdSchema })
  .meta({ id: 'PlantCreatedEvent' });

/** What the document says of an update's `changed`. */
export const CHANGED_DESCRIPTION = `The fields whose value changed, in the order ${PLANT_FIELD_NAMES.join(', ')} (never empty)`;

/** A plant was updated: the plant after the change, and which fields changed. */
export const PlantUpdatedEventSchema = z
  .object({
    id: EventIdSchema,
    type: z.literal('plant.updated'),
    createdAt: at,
    plant: PlantWithIdSchema,
    changed: z.array(z.enum(PLANT_FIELD_NAMES)).meta({ description: CHANGED_DESCRIPTION }),
  })
  .meta({ id: 'PlantUpdatedEvent' });

/** A plant was deleted: its id. */
export const PlantDeletedEventSchema = z
  .object({
    id: EventIdSchema,
    type: z.literal('plant.deleted'),
    createdAt: at,
    plant: z.object({ id: PlantIdSchema }),
  })
  .meta({ id: 'PlantDeletedEvent' });

/** One committed change, as the event streams send it (`GET /plants/events`, `plants.events`). */
export const PlantEventSchema = z
  .discriminatedUnion('type', [PlantCreatedEventSchema, PlantUpdatedEventSchema, PlantDeletedEventSchema])
  .meta({ id: 'PlantEvent' });

export type PlantEvent = z.infer<typeof PlantEventSchema>;

/** The kinds of event, as the streams name them (`event:` in Server-Sent Events, `type` in the data). */
export const PLANT_EVENT_TYPES = ['plant.created', 'plant.updated', 'plant.deleted'] as const;

/** A client's value in a message: as JSON (an exact integer too), or as text where JSON has none. */
function describeValue(value: unknown): string {
  try {
    return stringifyJson(value);
  } catch {
    return String(value);
  }
}

export const PlantEventTypeSchema = z.enum(PLANT_EVENT_TYPES, {
  error: (issue) =>
    `must be one of the event types ${PLANT_EVENT_TYPES.join(', ')} (not ${describeValue(issue.input)})`,
});

export type PlantEventType = z.infer<typeof PlantEventTypeSchema>;

/**
 * Query of `GET /plants/events` (and input of `plants.events`): resume after this event id (the
 * `Last-Event-ID` header wins), and which types of event to send.
 */
export const PlantEventsQuerySchema = z.object({
  after: EventIdSchema.optional().meta({
    description:
      'Resume: send the events after this id (the last one seen). Without it (and without `Last-Event-ID`), ' +
      'only events committed from now on are sent; `0` sends every event still kept.',
  }),
  types: z
    .array(PlantEventTypeSchema)
    .min(1, { error: 'must list at least one event type' })
    .optional()
    .meta({
      description:
        'Only these types of event (a comma-separated list; default: every type). The ids the stream sends ' +
        'are still the log ids, so a filtered stream sees gaps between them; resume it as any other.',
      param: { style: 'form', explode: false },
    }),
});
