import {
  EventIdSchema,
  type PlantEvent,
  PlantEventSchema,
  PlantEventsQuerySchema,
} from '@plant-store/schema';
import { z } from 'zod';
import type { EventStream } from '../events/hub.ts';
import { defineOperation } from './operation.ts';
import type { StoredEvent } from '../store/contract.ts';

export const plantEvents = defineOperation({
  scope: 'read',
  stream: true,
  openapi: {
    method: 'GET',
    path: '/plants/events',
    operationId: 'streamPlantEvents',
    summary: 'Stream plant events',
    description:
      'Server-Sent Events: every committed create (`plant.created`, with the plant), update (`plant.updated`, ' +
      'with the plant after it and the fields it changed) and delete (`plant.deleted`, with its id), in commit ' +
      'order, each as `id:` (the event id), `event:` (its type) and `data:` (the event as JSON, ids exact); with ' +
      '`types`, only the events of those types (their ids are still the log ids, with gaps between them). A ' +
      'comment line (`: heartbeat`) is sent when nothing else was for EVENTS_HEARTBEAT_MS. To resume after a ' +
      'disconnect, send the last id seen as `Last-Event-ID` (EventSource does) or `?after=`: every event after ' +
      'it follows, in order, without repeats, then live ones. Events are kept for EVENTS_RETENTION_MS; resuming ' +
      'from before that answers 410, and so does resuming after an id past the newest event in the log (after a ' +
      'restore from a backup, say): start again without an id. A consumer too slow to keep up is disconnected, ' +
      'and resumes by id. HEAD answers as GET would (the same checks, status and headers) and opens no stream.',
    tags: ['plants'],
    requestHeaders: z.object({
      'Last-Event-ID': EventIdSchema.optional().meta({
        description:
          'Resume after this event id (sent by EventSource when it reconnects); overrides `after`. A decimal ' +
          'integer from 0 to 9223372036854775807 without leading zeros, as `after`',
        minimum: 0,
      }),
    }),
    successDescription: 'The event stream (text/event-stream), one event per committed change',
    errorResponses: {
      400: 'A bad `after`, `Last-Event-ID` or `types` (an unknown event type)',
      410:
        'The events after this id are no longer kept, or the id is past the newest event in the log (e.g. after ' +
        'a restore from a backup): start again without an id',
      429:
        'This token has too many event streams open; or past the rate limit, or too many failed ' +
        'authentications from this address; retry after Retry-After',
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
