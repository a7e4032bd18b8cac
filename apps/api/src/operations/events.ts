import { type PlantEvent, PlantEventSchema, PlantEventsQuerySchema } from '@plant-store/schema';
import { z } from 'zod';
import type { EventStream } from '../events/hub.ts';
import { defineOperation } from '../operation.ts';
import type { StoredEvent } from '../store/store.ts';
import { PROTECTED_ERRORS } from './plants.ts';

export const plantEvents = defineOperation({
  scope: 'read',
  stream: true,
  openapi: {
    method: 'GET',
    path: '/plants/events',
    operationId: 'streamPlantEvents',
    summary: 'Stream plant events',
    description:
      'Server-Sent Events: every committed create (`plant.created`, with the plant) and delete (`plant.deleted`, ' +
      'with its id), in commit order, each as `id:` (the event id), `event:` (its type) and `data:` (the event as ' +
      'JSON, ids exact); with `types`, only the events of those types (their ids are still the log ids, with gaps ' +
      'between them). A comment line (`: heartbeat`) is sent when nothing else was for EVENTS_HEARTBEAT_MS. ' +
      'To resume after a disconnect, send the last id seen as `Last-Event-ID` (EventSource does) or `?after=`: ' +
      'every event after it follows, in order, without repeats, then live ones. Events are kept for ' +
      'EVENTS_RETENTION_MS; resuming from before that answers 410. A consumer too slow to keep up is ' +
      'disconnected, and resumes by id.',
    tags: ['plants'],
    requestHeaders: z.object({
      'Last-Event-ID': z
        .string()
        .regex(/^[0-9]{1,19}$/)
        .optional()
        .meta({
          description:
            'Resume after this event id (sent by EventSource when it reconnects); overrides `after`',
        }),
    }),
    successDescription: 'The event stream (text/event-stream), one event per committed change',
    errorResponses: {
      400: 'A bad `after`, `Last-Event-ID` or `types` (an unknown event type)',
      410: 'The events after this id are no longer kept',
      429: 'This token has too many event streams open',
      ...PROTECTED_ERRORS,
      503: 'The store is unavailable, or this instance has too many event streams open; retry later (see Retry-After)',
    },
  },
  input: PlantEventsQuerySchema,
  output: PlantEventSchema,
  run: ({ events, principal }, { after, types }): Promise<EventStream> =>
    events.open({ tokenName: principal.tokenName, after, types }),
});

/** An event as both streams send it. */
export function toPlantEvent(event: StoredEvent): PlantEvent {
  return Object.assign({}, event, { createdAt: event.createdAt.toISOString() }) as PlantEvent;
}
