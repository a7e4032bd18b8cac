import type { NewPlant, PlantWithId, WebhookDelivery, WebhookEndpoint } from '@plant-store/schema';
import type { ListOptions, PlantField, plantChanges } from './plant-rows.ts';
import type { sharedParts } from './shared.ts';

/** UTF-8 bytes of name and tag one page of `list` holds at most: old or SQL-written rows can be megabytes. */
export const PAGE_BUDGET_BYTES = 1024 * 1024;

/** One page of `list`; `more`: plants with greater ids remain. */
export type PlantPage = { plants: PlantWithId[]; more: boolean };
export function textBytes(plant: { name: string; tag?: string | null }): number {
  return Buffer.byteLength(plant.name) + (plant.tag ? Buffer.byteLength(plant.tag) : 0);
}

/** The storage contract: a create is answered once durably committed (fsync'd); ids are never rounded. */
export interface PlantStore extends ReturnType<typeof sharedParts>, ReturnType<typeof plantChanges> {
  /**
   * Inserts a plant with, in one transaction, its `plant.created` event, the deliveries of `outbox`,
   * `answer` in its Idempotency-Key's row (`KeyClaimLostError`, nothing changed, if the claim was lost)
   * and `endpointPayload` fanned out to the enabled endpoints that chose `plant.created` (read in SQL,
   * so every instance's count). Resolves with its version (its event's id), `false` if the id exists.
   */
  create(
    plant: NewPlant,
    outbox?: readonly NewDelivery[],
    answer?: KeyedAnswer,
    endpointPayload?: string,
  ): Promise<bigint | false>;
  /** Plants by id after `after`, filtered: up to `limit` and `maxBytes` (at least one), a row read ahead. */
  list(options: ListOptions): Promise<PlantPage>;
  /** Resolves once writes cannot be trusted (SQLite after a failed sync): calls reject until a restart. */
  readonly failed: Promise<Error>;
  close(): Promise<void>;
}

export type EventLog = PlantStore['events'];
export type DeliveryOutbox = PlantStore['deliveries'];
export type WebhookEndpointStore = PlantStore['webhookEndpoints'];
export type TokenStore = PlantStore['tokens'];
export type PrincipalStore = PlantStore['principals'];
export type StoredEvent =
  | { id: bigint; type: 'plant.created'; plant: PlantWithId; createdAt: Date }
  | { id: bigint; type: 'plant.updated'; plant: PlantWithId; changed: PlantField[]; createdAt: Date }
  | { id: bigint; type: 'plant.deleted'; plant: { id: bigint }; createdAt: Date };

/** What a `prune` deletes: at most `limit` rows older than `olderThanMs`, oldest first. */
export type Prune = { olderThanMs: number; limit: number };
/** An Idempotency-Key as one request holds it: scoped to the token's name, with the claim's random id. */
export type KeyClaim = { tokenName: string; key: string; claim: string };
/** What a keyed request answered: its REST status, JSON body (`null`: none, as for 204) and plant version, if any. */
export type StoredAnswer = { status: number; body: string | null; version?: bigint | undefined };
export type KeyedAnswer = KeyClaim & StoredAnswer;
export type ClaimOutcome =
  | { state: 'claimed' }
  /** Another request holds it and has not answered (or did not commit) yet. */
  | { state: 'in_flight'; fingerprint: string }
  | { state: 'completed'; fingerprint: string; answer: StoredAnswer };

/** Another request took over this one's Idempotency-Key (held too long): nothing changed. */
export class KeyClaimLostError extends Error {
  override name = 'KeyClaimLostError';
  override message = 'the Idempotency-Key was claimed by another request';
}

/** A delivery as `create` enqueues it: a duplicate `id` (`newWebhookId`) fails the whole write. */
export type NewDelivery = { id: string; url: string; payload: string };
export type DeliveryEvent = WebhookDelivery['event'];

/** A webhook delivery claimed for one attempt; `attempts` counts this one. */
export type Delivery = NewDelivery & {
  attempts: number;
  createdAt: Date;
  /** Absent for WEBHOOK_URLS subscribers. */
  endpoint?: { id: string; event: DeliveryEvent };
  /** The `traceparent` of the traced call that enqueued it (migration 11). */
  traceContext?: string;
};

/** Who a claim is for: an operator subscriber URL (WEBHOOK_URLS) or a registered endpoint. */
export type Subscriber = { url: string } | { endpointId: string };
/** An endpoint's delivery as listed; `nextAttemptAt`: when due, or the running attempt's lease end. */
export type EndpointDelivery = Omit<WebhookDelivery, 'nextAttemptAt' | 'createdAt'> & {
  nextAttemptAt: Date | null;
  createdAt: Date;
};

/** An endpoint, seen only by its owner (a token's name); secrets sealed (webhooks/secrets.ts). */
export type StoredEndpoint = Pick<WebhookEndpoint, 'id' | 'url' | 'description' | 'events'> & {
  owner: string;
  secret: string;
  previousSecret: string | null;
  previousSecretExpiresAt: Date | null;
  createdAt: Date;
  disabled: { at: Date; reason: EndpointDisabledReason } | null;
};
export type EndpointDisabledReason = NonNullable<WebhookEndpoint['disabled']>['reason'];

/** The store cannot be reached or cannot commit: nothing was acknowledged. Answered as 503. */
export class StoreUnavailableError extends Error {
  override name = 'StoreUnavailableError';
}
