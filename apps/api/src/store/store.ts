import type { NewPlant, PlantWithId, WebhookDelivery, WebhookEndpointDisabled } from '@plant-store/schema';
import type { Scope } from '../scopes.ts';

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
export interface PlantStore {
  /**
   * Inserts a plant and, in the same transaction, its `plant.created` event and the pending
   * deliveries of `outbox` (a transactional outbox). Resolves `true` once all are committed, `false`
   * when the id already exists (and then nothing was appended or enqueued). With `answer` (a request
   * carrying an Idempotency-Key), a create that inserts also stores `answer` in its key's row, in the
   * same transaction; it rejects with `KeyClaimLostError`, changing nothing, when the key is no longer
   * claimed by `answer.claim`. With `endpointPayload`, the same transaction also enqueues one
   * `plant.created` delivery of it to every enabled webhook endpoint, as the table holds them then
   * (read in SQL, so an endpoint registered on another instance counts at once).
   */
  create(
    plant: NewPlant,
    outbox?: readonly NewDelivery[],
    answer?: KeyedAnswer,
    endpointPayload?: string,
  ): Promise<boolean>;
  /** The plant with this id, or `undefined`. */
  get(id: bigint): Promise<PlantWithId | undefined>;
  /**
   * Deletes a plant and appends its `plant.deleted` event, in one transaction. Resolves `true` once
   * committed, `false` when there was no such plant (and then nothing was appended). `answer` as for
   * `create`.
   */
  delete(id: bigint, answer?: KeyedAnswer): Promise<boolean>;
  /**
   * Plants in ascending id order, strictly after `after` when given: at most `limit`, and only as
   * many as fit in `maxBytes` (default `PAGE_BUDGET_BYTES`) of name and tag text, but always at least
   * one when any remain. The process never holds more than that page and one more row.
   */
  list(options: { limit: number; after?: bigint; maxBytes?: number }): Promise<PlantPage>;
  /** Resolves once the store answers a query; rejects with `StoreUnavailableError` otherwise. */
  ping(): Promise<void>;
  /**
   * Resolves, with the cause, once the store can no longer be trusted with writes (the SQLite store
   * after a failed log sync or COMMIT): from then on every call rejects with `StoreUnavailableError`
   * and only a restart, recovering from what is on disk, brings it back. Never settles on stores
   * that recover by themselves (PostgreSQL).
   */
  readonly failed: Promise<Error>;
  /** The log of committed changes that `create` and `delete` append to. */
  events: EventLog;
  /** The webhook outbox that `create` fills and the delivery worker drains. */
  deliveries: DeliveryOutbox;
  /** Bearer tokens issued with `main.js token create`, kept only as SHA-256 digests. */
  tokens: TokenStore;
  /** Idempotency-Key claims and the answers stored with them (see idempotency.ts). */
  idempotencyKeys: IdempotencyKeyStore;
  /** Webhook endpoints registered by tokens, with their sealed secrets. */
  webhookEndpoints: WebhookEndpointStore;
  close(): Promise<void>;
}

/** A committed change, as the event log keeps it. */
export type StoredEvent =
  | { id: bigint; type: 'plant.created'; plant: PlantWithId; createdAt: Date }
  | { id: bigint; type: 'plant.deleted'; plant: { id: bigint }; createdAt: Date };

/**
 * Every committed create and delete, in commit order, each with an id greater than every id
 * committed before it: a reader that has seen id n never later finds a new event below n. An event
 * exists if and only if its change committed.
 */
export interface EventLog {
  /** Up to `limit` events with ids greater than `after`, ascending. */
  after(after: bigint, limit: number): Promise<StoredEvent[]>;
  /** The greatest event id, or 0n when the log is empty (and nothing was ever pruned). */
  head(): Promise<bigint>;
  /** The greatest id pruned so far, 0n when none: a reader resuming below it has missed events. */
  prunedThrough(): Promise<bigint>;
  /** How many events have ids greater than `after`, counted no further than `limit` (an index scan of at most that). */
  countAfter(after: bigint, limit: number): Promise<number>;
  /** Deletes up to `limit` events older than `olderThanMs`, oldest first; resolves with how many. */
  prune(options: Prune): Promise<number>;
  /**
   * Calls `listener` whenever events may have been appended: after this process's commits and, on
   * PostgreSQL, on every instance's (LISTEN/NOTIFY). Notifications can be missed; the log is the
   * truth. Returns the function that stops it.
   */
  watch(listener: () => void): () => void;
}

/** What a `prune` deletes: at most `limit` rows older than `olderThanMs`, oldest first. */
export type Prune = { olderThanMs: number; limit: number };

/** An Idempotency-Key as one request holds it: scoped to the token's name, with the claim's random id. */
export type KeyClaim = { tokenName: string; key: string; claim: string };

/** What a keyed request answered: its REST status and JSON body (`null`: none, as for 204). */
export type StoredAnswer = { status: number; body: string | null };

/** The answer a keyed create or delete stores with its change. */
export type KeyedAnswer = KeyClaim & StoredAnswer;

/** What claiming a key found. */
export type ClaimOutcome =
  /** The key is this request's now: nobody held it, or it was free to take (see `claim`). */
  | { state: 'claimed' }
  /** Another request holds it and has not answered (or did not commit) yet. */
  | { state: 'in_flight'; fingerprint: string }
  /** A request with this key committed its change and stored this answer. */
  | { state: 'completed'; fingerprint: string; answer: StoredAnswer };

/**
 * The Idempotency-Key table. Each call commits on its own (a claim is its own short transaction),
 * so a claim is seen at once by every process sharing the store; the answer itself is stored by
 * `create`/`delete` in the change's transaction. Times are the store's clock.
 */
export interface IdempotencyKeyStore {
  /**
   * Takes `key` for this request when nobody holds it, when its holder claimed it more than
   * `ttlMs` ago (the key has expired: whatever it was is forgotten), or when its holder has not
   * completed within `inFlightMs` and the fingerprint is the same (a crashed request's claim).
   * Otherwise reports what holds it.
   */
  claim(
    options: KeyClaim & { fingerprint: string; inFlightMs: number; ttlMs: number },
  ): Promise<ClaimOutcome>;
  /** Frees a claim that made no change (the request failed), if this request still holds it. */
  release(claim: KeyClaim): Promise<void>;
  /** Deletes keys claimed more than `olderThanMs` ago (see `Prune`); resolves with how many. */
  prune(options: Prune): Promise<number>;
}

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
 * The deliveries table. A delivery is pending until it is delivered or failed. Claiming one leases
 * it: no other claim (from any process sharing the store) sees it until the lease ends; a worker
 * that dies mid-attempt thus delays it by at most the lease. The settling calls change only pending
 * deliveries, so a late answer never undoes a delivered one.
 */
export interface DeliveryOutbox {
  /**
   * Leases up to `limit` due pending deliveries to one subscriber for `leaseMs`, counting the attempt,
   * oldest due first: one subscriber at a time, so each gets its own share of the attempts.
   */
  claim(options: Subscriber & { limit: number; leaseMs: number }): Promise<Delivery[]>;
  /** The distinct operator URLs that have pending deliveries (due or not), at most `limit` of them. */
  pendingUrls(options: { limit: number }): Promise<string[]>;
  /** The distinct endpoints that have pending deliveries (due or not), at most `limit` of them. */
  pendingEndpoints(options: { limit: number }): Promise<string[]>;
  /**
   * Records these deliveries as delivered: one write however many, so outcomes keep up with creates.
   * `responseCodes[i]`, when given, is the HTTP status that acknowledged `ids[i]`.
   */
  markDelivered(ids: readonly string[], responseCodes?: readonly number[]): Promise<void>;
  /**
   * Hands claimed deliveries back unattempted (a worker that claimed more than it could start, at
   * shutdown or when a subscriber's breaker opened): due at once, and the claim's attempt uncounted.
   * Each is identified by its id and the `attempts` its claim returned; one claimed again since
   * (its lease ran out) is left as it is.
   */
  release(claims: readonly Pick<Delivery, 'id' | 'attempts'>[]): Promise<void>;
  /** Makes the delivery due again in `delayMs`, recording why this attempt failed (and its HTTP status, if any). */
  retry(id: string, options: { delayMs: number; error: string; responseCode?: number }): Promise<void>;
  /** Stops retrying: the delivery is kept as failed, with the last attempt's error (and status). */
  markFailed(id: string, error: string, responseCode?: number): Promise<void>;
  /**
   * Enqueues one delivery to a registered endpoint (a ping): pending, due at once; `'full'`, adding
   * nothing, when the endpoint already has `maxPending` pending deliveries. The count and the insert
   * are one step for every process sharing the store (counted through the endpoint's due index, at
   * most `maxPending` entries read).
   */
  enqueue(
    delivery: NewDelivery & { endpointId: string; event: DeliveryEvent },
    options: { maxPending: number },
  ): Promise<EndpointDelivery | 'full'>;
  /**
   * Makes an endpoint's delivery pending and due at once, whatever its status, with its attempts
   * counted afresh (and the last attempt's error and status cleared); `undefined` when the endpoint
   * has no delivery of that id, `'full'` (changing nothing) as for `enqueue`.
   */
  redeliver(options: {
    id: string;
    endpointId: string;
    maxPending: number;
  }): Promise<EndpointDelivery | 'full' | undefined>;
  /**
   * An endpoint's deliveries, newest first (by enqueue time, then id), at most `limit`, strictly
   * before the delivery `before` when given; `undefined` when `before` is not one of its deliveries.
   */
  listForEndpoint(options: {
    endpointId: string;
    limit: number;
    before?: string;
  }): Promise<{ deliveries: EndpointDelivery[]; more: boolean } | undefined>;
  /** Deletes the pending deliveries of an endpoint that no longer exists (enqueued as it was deleted). */
  discardOrphans(endpointId: string): Promise<number>;
  /** Failed deliveries, oldest first. */
  listFailed(options: { limit: number }): Promise<FailedDelivery[]>;
  /** How many deliveries are in each state: counts every row, for the `webhooks failed` command. */
  counts(): Promise<{ pending: number; delivered: number; failed: number }>;
  /**
   * Pending and failed deliveries, each counted up to `cap` only (through their partial indexes), so
   * that a metrics scrape costs the same however large the outbox is.
   */
  depth(options: { cap: number }): Promise<{ pending: number; failed: number }>;
  /** Deletes deliveries delivered more than `olderThanMs` ago (see `Prune`); resolves with how many. */
  prune(options: Prune): Promise<number>;
  /** The same for deliveries that failed (used up their attempts) more than `olderThanMs` ago. */
  pruneFailed(options: Prune): Promise<number>;
}

/**
 * A registered webhook endpoint as the store keeps it, owned by the name of the token that
 * registered it (only that token sees it). Secrets are sealed (webhooks/secrets.ts): the store never
 * sees one in the clear; the previous one signs alongside until `previousSecretExpiresAt`.
 */
export type StoredEndpoint = {
  id: string;
  owner: string;
  url: string;
  description: string | null;
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
export type EndpointSummary = Omit<
  StoredEndpoint,
  'secret' | 'previousSecret' | 'previousSecretExpiresAt'
> & {
  pending: number;
  failed: number;
};

/**
 * Registered webhook endpoints. Every call that names an endpoint also names its owner, except
 * those of the delivery worker and the admin commands: another owner's endpoint is not found.
 */
export interface WebhookEndpointStore {
  /** Registers an endpoint (`secret` sealed), unless its owner already has `maxPerOwner`: then `false`. */
  create(
    endpoint: Pick<StoredEndpoint, 'id' | 'owner' | 'url' | 'description' | 'secret'>,
    options: { maxPerOwner: number },
  ): Promise<StoredEndpoint | false>;
  /** The owner's endpoints, oldest first. */
  list(owner: string): Promise<StoredEndpoint[]>;
  /** The endpoint, if it exists and belongs to `owner` (any owner's when `owner` is omitted). */
  get(id: string, owner?: string): Promise<StoredEndpoint | undefined>;
  /** Deletes the endpoint and all of its deliveries, in one transaction, as `get` finds it; `false` when none. */
  delete(id: string, owner?: string): Promise<boolean>;
  /**
   * Disables the endpoint: create fans out to it no more, and in the same transaction its pending
   * deliveries become failed with `disabledError` of its reason. An endpoint already disabled keeps
   * the time and reason it has (its pending deliveries, enqueued by a create that raced the
   * disabling, are failed all the same). `undefined` when there is no such endpoint.
   */
  disable(id: string, reason: EndpointDisabledReason): Promise<StoredEndpoint | undefined>;
  /** Enables a disabled endpoint again (its failed deliveries stay failed); `undefined` when none. */
  enable(id: string): Promise<StoredEndpoint | undefined>;
  /**
   * Makes `secret` (sealed) the endpoint's secret and its current one the previous, signing alongside
   * for `overlapMs` more (the one before that is dropped); `undefined` when the owner has no such endpoint.
   */
  rotate(
    id: string,
    owner: string,
    options: { secret: string; overlapMs: number },
  ): Promise<StoredEndpoint | undefined>;
  /** Every endpoint (of one owner, when given), oldest first, with pending and failed delivery counts. */
  summaries(options: { owner?: string }): Promise<EndpointSummary[]>;
}

/** An issued bearer token as the store keeps it: never the secret, only its SHA-256 digest (hex). */
export type StoredToken = { name: string; digest: string; scopes: Scope[] };

export type TokenRecord = { name: string; scopes: Scope[]; createdAt: Date; revokedAt: Date | undefined };

export interface TokenStore {
  /** Adds a token. Resolves `false` when a token of that name exists (revoked ones keep their name). */
  create(token: StoredToken): Promise<boolean>;
  /**
   * Revokes the active token of that name and, in the same transaction, disables its webhook
   * endpoints (`token_revoked`, their pending deliveries failed, as `WebhookEndpointStore.disable`
   * does). Resolves with how many endpoints it disabled, `undefined` when there is no active token
   * of that name (and then nothing changed).
   */
  revoke(name: string): Promise<{ endpointsDisabled: number } | undefined>;
  /** Every token, revoked ones included, by name. */
  list(): Promise<TokenRecord[]>;
  /** The tokens that are not revoked, for verifiers. */
  active(): Promise<StoredToken[]>;
}

/** The store cannot be reached or cannot commit: nothing was acknowledged. Answered as 503. */
export class StoreUnavailableError extends Error {
  override name = 'StoreUnavailableError';
}
