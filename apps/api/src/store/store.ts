import type {
  NewPlant,
  PlantWithId,
  WebhookDelivery,
  WebhookEndpoint,
  WebhookEndpointDisabled,
} from '@plant-store/schema';
import type { deliveryOutbox } from './deliveries.ts';
import type { webhookEndpoints } from './endpoints.ts';
import type { eventLog } from './events.ts';
import type { idempotencyKeys } from './idempotency-keys.ts';
import type { ListOptions, PlantField, plantChanges } from './plants.ts';
import type { sharedParts } from './shared.ts';
import type { tokenStore } from './tokens.ts';

/**
 * Bytes of name and tag text (UTF-8) one page of `list` holds at most, whatever the store holds:
 * rows written before the length limits, or by SQL, can be megabytes each.
 */
export const PAGE_BUDGET_BYTES = 1024 * 1024;

/** One page of `list`; `more`: plants with greater ids remain (the page ended at `limit` or at its budget). */
export type PlantPage = { plants: PlantWithId[]; more: boolean };

/** What one plant costs a page's byte budget: its name and tag in UTF-8. */
export function textBytes(plant: { name: string; tag?: string | null }): number {
  return Buffer.byteLength(plant.name) + (plant.tag ? Buffer.byteLength(plant.tag) : 0);
}

/**
 * The storage contract. Every implementation answers a create only after the plant is durably
 * committed (on disk, fsync'd), and never rounds an id.
 */
export interface PlantStore extends ReturnType<typeof sharedParts>, ReturnType<typeof plantChanges> {
  /**
   * Inserts a plant and, in the same transaction, its `plant.created` event and the pending
   * deliveries of `outbox` (a transactional outbox). Resolves with the plant's version (its event's
   * id) once all are committed, `false` when the id already exists (and then nothing was appended or
   * enqueued). With `answer` (a request carrying an Idempotency-Key), a create that inserts also
   * stores `answer` in its key's row, in the same transaction; it rejects with `KeyClaimLostError`,
   * changing nothing, when the key is no longer claimed by `answer.claim`. With `endpointPayload`,
   * the same transaction also enqueues one `plant.created` delivery of it to every enabled webhook
   * endpoint that chose `plant.created`, as the table holds them then (read in SQL, so an endpoint
   * registered on another instance counts at once).
   */
  create(
    plant: NewPlant,
    outbox?: readonly NewDelivery[],
    answer?: KeyedAnswer,
    endpointPayload?: string,
  ): Promise<bigint | false>;
  /**
   * Plants in ascending id order, strictly after `after` when given, only those with `tag` and whose
   * name starts with `namePrefix` when given: at most `limit`, and only as many as fit in `maxBytes`
   * (default `PAGE_BUDGET_BYTES`) of name and tag text, but always at least one when any remain. The
   * process never holds more than that page and one more row.
   */
  list(options: ListOptions): Promise<PlantPage>;
  /** Resolves once the store answers a query; rejects with `StoreUnavailableError` otherwise. */
  ping(): Promise<void>;
  /**
   * Resolves, with the cause, once the store can no longer be trusted with writes (the SQLite store
   * after a failed log sync or COMMIT): from then on every call rejects with `StoreUnavailableError`
   * and only a restart, recovering from what is on disk, brings it back. Never settles on stores
   * that recover by themselves (PostgreSQL).
   */
  readonly failed: Promise<Error>;
  close(): Promise<void>;
}

/** The parts both stores share, each typed by its implementation (documented there). */
export type EventLog = ReturnType<typeof eventLog>;
export type IdempotencyKeyStore = ReturnType<typeof idempotencyKeys>;
export type DeliveryOutbox = ReturnType<typeof deliveryOutbox>;
export type WebhookEndpointStore = ReturnType<typeof webhookEndpoints>;
export type TokenStore = ReturnType<typeof tokenStore>;

/** A committed change, as the event log keeps it. */
export type StoredEvent =
  | { id: bigint; type: 'plant.created'; plant: PlantWithId; createdAt: Date }
  | { id: bigint; type: 'plant.updated'; plant: PlantWithId; changed: PlantField[]; createdAt: Date }
  | { id: bigint; type: 'plant.deleted'; plant: { id: bigint }; createdAt: Date };

/** What a `prune` deletes: at most `limit` rows older than `olderThanMs`, oldest first. */
export type Prune = { olderThanMs: number; limit: number };

/** An Idempotency-Key as one request holds it: scoped to the token's name, with the claim's random id. */
export type KeyClaim = { tokenName: string; key: string; claim: string };

/** What a keyed request answered: its REST status and JSON body (`null`: none, as for 204). */
export type StoredAnswer = { status: number; body: string | null };

/** The answer a keyed create or delete stores with its change. */
export type KeyedAnswer = KeyClaim & StoredAnswer;

export type ClaimOutcome =
  /** The key is this request's now: nobody held it, or it was free to take (see `claim`). */
  | { state: 'claimed' }
  /** Another request holds it and has not answered (or did not commit) yet. */
  | { state: 'in_flight'; fingerprint: string }
  /** A request with this key committed its change and stored this answer. */
  | { state: 'completed'; fingerprint: string; answer: StoredAnswer };

/** The request no longer holds its Idempotency-Key (another took over a claim it held too long): nothing changed. */
export class KeyClaimLostError extends Error {
  override name = 'KeyClaimLostError';
  override message = 'the Idempotency-Key was claimed by another request';
}

/**
 * A webhook delivery as `create` enqueues it: pending, due at once. `id` is the Standard Webhooks
 * `webhook-id`, the same on every attempt; new and unique (`newWebhookId`): an id already in the
 * outbox fails the whole write. `payload` is the body to send, exactly.
 */
export type NewDelivery = { id: string; url: string; payload: string };

/** What a delivery delivers: a new plant, or an endpoint's test event. */
export type DeliveryEvent = WebhookDelivery['event'];

/** A webhook delivery claimed for one attempt. */
export type Delivery = NewDelivery & {
  /** Attempts so far, this one included. */
  attempts: number;
  createdAt: Date;
  /** The registered endpoint it goes to, and its event; absent for WEBHOOK_URLS subscribers. */
  endpoint?: { id: string; event: DeliveryEvent };
  /** The W3C `traceparent` of the traced store call that enqueued it (migration 11); absent when none was. */
  traceContext?: string;
};

/** Who a claim is for: an operator subscriber URL (WEBHOOK_URLS) or a registered endpoint. */
export type Subscriber = { url: string } | { endpointId: string };

/**
 * A delivery of an endpoint as its owner lists it (the schema's `WebhookDelivery`, with times as
 * Dates): `nextAttemptAt` is when the next attempt is due (or, while one runs, its lease ends).
 */
export type EndpointDelivery = Omit<WebhookDelivery, 'nextAttemptAt' | 'createdAt'> & {
  nextAttemptAt: Date | null;
  createdAt: Date;
};

/** A delivery that used up its attempts. */
export type FailedDelivery = Delivery & { lastError: string; failedAt: Date };

/**
 * A registered webhook endpoint as the store keeps it, owned by the name of the token that
 * registered it (only that token sees it). Secrets are sealed (webhooks/secrets.ts): the store never
 * sees one in the clear; the previous one signs alongside until `previousSecretExpiresAt`.
 */
export type StoredEndpoint = Pick<WebhookEndpoint, 'id' | 'url' | 'description' | 'events'> & {
  owner: string;
  secret: string;
  previousSecret: string | null;
  previousSecretExpiresAt: Date | null;
  createdAt: Date;
  /** Since when and why it gets no deliveries; null while enabled. */
  disabled: { at: Date; reason: EndpointDisabledReason } | null;
};

/** Why an endpoint is disabled (see `WEBHOOK_ENDPOINT_DISABLED_REASONS`). */
export type EndpointDisabledReason = WebhookEndpointDisabled['reason'];

/** The `last_error` of the pending deliveries an endpoint's disabling fails. */
export const disabledError = (reason: EndpointDisabledReason) => `endpoint disabled (${reason})`;

/** An endpoint with its delivery counts, for the admin listing. */
export type EndpointSummary = Omit<StoredEndpoint, 'secret' | 'previousSecret' | 'previousSecretExpiresAt'> &
  Record<'pending' | 'failed', number>;

/** The store cannot be reached or cannot commit: nothing was acknowledged. Answered as 503. */
export class StoreUnavailableError extends Error {
  override name = 'StoreUnavailableError';
}
