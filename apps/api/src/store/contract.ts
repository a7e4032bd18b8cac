import type {
  NewPlant,
  PlantEventType,
  PlantFieldName,
  PlantWithId,
  UpdatePlantInput,
  WebhookDelivery,
  WebhookEndpoint,
} from '@plant-store/schema';
import type { Scope } from '../auth/scopes.ts';

/*
 * The storage contract, written down: what the api asks of a store, and nothing of how. Both stores
 * (sqlite/store.ts, postgres/store.ts) are checked against it by the compiler, and pass one suite
 * (test/in-process/store-contract.test.ts). The store knows nothing of requests, tracing or
 * webhooks: what it must record (answers, payloads, trace contexts) it is handed.
 */

/** The storage contract: a change is answered once durably committed (fsync'd); ids are never rounded. */
export interface PlantStore {
  /** Inserts a plant with its `plant.created` event and `options.outbox`, in one transaction; resolves with its version (its event's id), `false` if the id exists. */
  create(plant: NewPlant, options?: CreateOptions): Promise<bigint | false>;
  /** Changes a plant (fanning `plant.updated` out to the endpoints that chose it); `undefined` when there is no such plant. */
  update(change: PlantChange, options?: ChangeOptions): Promise<UpdateOutcome | undefined>;
  /** Deletes a plant (fanning `plant.deleted` out); `false` when there is none, `{ stale }` when `expected` fails. */
  delete(id: bigint, options?: ChangeOptions): Promise<boolean | { stale: bigint }>;
  /** The plant with this id, if any. */
  get(id: bigint): Promise<PlantWithId | undefined>;
  /** Plants by id after `after`, filtered: up to `limit` and `maxBytes` (at least one), a row read ahead. */
  list(options: ListOptions): Promise<PlantPage>;
  /** Resolves once the store answers a query (SQLite: after the commit in flight is durable). */
  ping(): Promise<void>;
  /** The log of committed changes. */
  readonly events: EventLog;
  /** The webhook outbox. */
  readonly deliveries: DeliveryOutbox;
  /** Bearer tokens issued with `main.js token create`. */
  readonly tokens: TokenStore;
  /** Principals of identity providers cut off with `main.js principal block` (migration 15). */
  readonly principals: PrincipalStore;
  /** The Idempotency-Key table: a claim commits alone, so all see it; the answer commits with the change. */
  readonly idempotencyKeys: IdempotencyKeys;
  /** Registered webhook endpoints. */
  readonly webhookEndpoints: WebhookEndpointStore;
  /** Resolves once writes cannot be trusted (SQLite after a failed sync): calls reject until a restart. */
  readonly failed: Promise<Error>;
  /** Ends every call in flight and closes the connections. */
  close(): Promise<void>;
}

/** What opening a store is handed besides where it is. */
export type StoreHooks = {
  /** Watches each group commit (tracing/commit.ts makes a span of it); none: nothing watches. */
  commits?: CommitObserver | undefined;
};

/** `db.system` as OpenTelemetry's semantic conventions name the stores. */
export type DbSystem = 'sqlite' | 'postgresql';

/** Watches a store's group commits, as the store is handed it: the store keeps its marks, knowing nothing of them. */
export interface CommitObserver<Mark = unknown> {
  /** A call queues a write now: what to keep of that call (`undefined`: nothing), handed back with its batch. */
  queued(): Mark | undefined;
  /** A batch goes out, with its writes' marks; `end` it once durable, or failed (with the error). */
  committing(system: DbSystem, marks: readonly (Mark | undefined)[]): { end(error?: unknown): void };
}

/** What every keyed change takes: the Idempotency-Key record to keep with it, and the trace to record. */
export type ChangeOptions = {
  /** The versions the plant must have (If-Match): otherwise nothing changes, and the outcome is `{ stale }`. */
  expected?: Expected | undefined;
  /** Kept with the change, in its transaction, made only while the request holds the key (`KeyClaimLostError`, nothing changed, otherwise). */
  key?: KeyRecord | undefined;
  /** The W3C `traceparent` kept with each delivery the change enqueues (tracing/traced-store.ts hands it in). */
  traceContext?: string | undefined;
};

/** A create's options: a create has no version to expect, and writes the outbox it is handed. */
export type CreateOptions = Omit<ChangeOptions, 'expected'> & { outbox?: Outbox | undefined };

/** What a create enqueues for webhooks, built by its caller (operations/plants.ts). */
export type Outbox = {
  /** One delivery per operator subscriber URL (WEBHOOK_URLS). */
  deliveries?: readonly NewDelivery[] | undefined;
  /** The body fanned out to every enabled endpoint that chose `plant.created` (read in SQL: every instance's). */
  endpointPayload?: string | undefined;
};

/** Which versions a change may apply to: any (the plant must only exist), or only these. */
export type Expected = 'any' | readonly bigint[];

/** An Idempotency-Key as one request holds it: scoped to the token's name, with the claim's random id. */
export type KeyClaim = { tokenName: string; key: string; claim: string };
/**
 * The answer a keyed change keeps with its key: the REST status and JSON body (`null`: none, as a 204's;
 * left out: the plant the change leaves, as an update answers, else none). Its version is the change's.
 */
export type KeyRecord = KeyClaim & { status: number; body?: string | null | undefined };
/** What a keyed request answered: its REST status, JSON body (`null`: none, as for 204) and plant version, if any. */
export type StoredAnswer = { status: number; body: string | null; version?: bigint | undefined };
export type ClaimOutcome =
  | { state: 'claimed' }
  /** Another request holds it and has not answered (or did not commit) yet. */
  | { state: 'in_flight'; fingerprint: string }
  | { state: 'completed'; fingerprint: string; answer: StoredAnswer };

/** The Idempotency-Key table. */
export interface IdempotencyKeys {
  /** Takes `key` when free, expired (`ttlMs`) or a crashed request's (`inFlightMs`, same fingerprint). */
  claim(
    options: KeyClaim & { fingerprint: string; inFlightMs: number; ttlMs: number },
  ): Promise<ClaimOutcome>;
  /** Frees a claim that made no change, if this request still holds it. */
  release(claim: KeyClaim): Promise<void>;
  /** Deletes keys claimed more than `olderThanMs` ago; resolves with how many. */
  prune(options: Prune): Promise<number>;
}

/** Another request took over this one's Idempotency-Key (held too long): nothing changed. */
export class KeyClaimLostError extends Error {
  override name = 'KeyClaimLostError';
  override message = 'the Idempotency-Key was claimed by another request';
}

/** A page's bounds and filters (see `PlantStore.list`). */
export type ListOptions = {
  limit: number;
  after?: bigint | undefined;
  maxBytes?: number | undefined;
  tag?: string | undefined;
  namePrefix?: string | undefined;
};
/**
 * One page of `list`; `more`: plants with greater ids may remain. `cursor`: the greatest id a page cut
 * short by its scan budget read (store/filtered-pages.ts), after which the next page starts.
 */
export type PlantPage = { plants: PlantWithId[]; more: boolean; cursor?: bigint };
/** UTF-8 bytes of plant fields (`textBytes`) one page of `list` holds at most: old or SQL-written rows can be megabytes. */
export const PAGE_BUDGET_BYTES = 1024 * 1024;

/** A field of `PLANT_FIELDS`. */
export type PlantField = PlantFieldName;
/** What an update sets: the whole change, every field present set; an optional field's `null` removes it. */
export type PlantChange = Omit<UpdatePlantInput, 'expectedVersion'>;
/** The plant after an update and the fields it changed (none: no-op), or the version failing `expected`. */
export type UpdateOutcome = { plant: PlantWithId; changed: PlantField[] } | { stale: bigint };

export type StoredEvent =
  | { id: bigint; type: 'plant.created'; plant: PlantWithId; createdAt: Date }
  | { id: bigint; type: 'plant.updated'; plant: PlantWithId; changed: PlantField[]; createdAt: Date }
  | { id: bigint; type: 'plant.deleted'; plant: { id: bigint }; createdAt: Date };

/** Calls `listener` after commits that may have appended events (any instance's, on PostgreSQL); returns its removal. */
export type Watch = (listener: () => void) => () => void;

/** The log of committed changes: a reader at id n never later finds one below n, nor one uncommitted. */
export interface EventLog {
  /** Up to `limit` events after id `after`, in id order. */
  after(after: bigint, limit: number): Promise<StoredEvent[]>;
  /** The greatest event id, or 0n when the log is empty (and nothing was ever pruned). */
  head(): Promise<bigint>;
  /** The greatest id pruned so far, 0n when none: a reader resuming below it has missed events. */
  prunedThrough(): Promise<bigint>;
  /** How many events follow `after`, counted no further than `limit`. */
  countAfter(after: bigint, limit: number): Promise<number>;
  /** Deletes old events (see `Prune`), recording the greatest id pruned in the same transaction; resolves with how many. */
  prune(options: Prune): Promise<number>;
  /** Calls a listener after commits that may have appended events. */
  watch: Watch;
}

/** What a `prune` deletes: at most `limit` rows older than `olderThanMs`, oldest first. */
export type Prune = { olderThanMs: number; limit: number };

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
export type FailedDelivery = Delivery & { lastError: string; failedAt: Date };

/** A failed attempt's delivery, due again in `delayMs`, and why the attempt failed. */
export type Retry = { id: string; delayMs: number; error: string; responseCode?: number | undefined };
/** Who a claim is for: an operator subscriber URL (WEBHOOK_URLS) or a registered endpoint. */
export type Subscriber = { url: string } | { endpointId: string };
/** An endpoint's delivery as listed; `nextAttemptAt`: when due, or the running attempt's lease end. */
export type EndpointDelivery = Omit<WebhookDelivery, 'nextAttemptAt' | 'createdAt'> & {
  nextAttemptAt: Date | null;
  createdAt: Date;
};
/** What an enqueue or redelivery records besides the delivery: the trace of the call that made it. */
type Traced = { traceContext?: string | undefined };

/** The webhook outbox: a claim leases a delivery from every process; settling changes only pending ones. */
export interface DeliveryOutbox {
  /** Leases up to `limit` due deliveries of one subscriber (each gets its share) for `leaseMs`. */
  claim(options: Subscriber & { limit: number; leaseMs: number }): Promise<Delivery[]>;
  /**
   * `claim` for each of `claims`, answering each its deliveries in order, as one write: the
   * endpoints' in one statement on PostgreSQL; on SQLite they join one commit.
   */
  claimEach(claims: readonly (Subscriber & { limit: number })[], leaseMs: number): Promise<Delivery[][]>;
  /** `claimEach` calls worth having in flight at once. */
  readonly claimsAtOnce: number;
  /** Up to `limit` operator URLs with pending deliveries (due or not). */
  pendingUrls(options: { limit: number }): Promise<string[]>;
  /** Up to `limit` endpoints with pending deliveries (due or not). */
  pendingEndpoints(options: { limit: number }): Promise<string[]>;
  /** Marks `ids` delivered (acknowledged by `codes`) in one write, so outcomes keep up with creates. */
  markDelivered(ids: readonly string[], codes?: readonly number[]): Promise<void>;
  /** Hands claims back unattempted (shutdown, open breaker), due now; one claimed again is left alone. */
  release(claims: readonly Pick<Delivery, 'id' | 'attempts'>[]): Promise<void>;
  /** Makes the delivery due again in `delayMs`, recording why this attempt failed. */
  retry(id: string, options: Omit<Retry, 'id'>): Promise<void>;
  /** `retry` of many deliveries in one write. */
  retryMany(retries: readonly Retry[]): Promise<void>;
  /** Stops retrying: the delivery is kept as failed. */
  markFailed(id: string, error: string, responseCode?: number): Promise<void>;
  /** Enqueues a ping to an endpoint, due at once; `'full'`, adding nothing, at `maxPending` pending. */
  enqueue(
    delivery: NewDelivery & { endpointId: string; event: DeliveryEvent },
    options: { maxPending: number } & Traced,
  ): Promise<EndpointDelivery | 'full'>;
  /** Makes an endpoint's delivery pending and due, attempts afresh; `undefined`: no such delivery. */
  redeliver(
    options: { id: string; endpointId: string; maxPending: number } & Traced,
  ): Promise<EndpointDelivery | 'full' | undefined>;
  /** An endpoint's deliveries, newest first, after `before`; `undefined` if `before` is not its. */
  listForEndpoint(options: {
    endpointId: string;
    limit: number;
    before?: string;
  }): Promise<{ deliveries: EndpointDelivery[]; more: boolean } | undefined>;
  /** Deletes the deliveries of an endpoint deleted as they were enqueued; resolves with how many. */
  discardOrphans(endpointId: string): Promise<number>;
  /** Failed deliveries, oldest first. */
  listFailed(options: { limit: number }): Promise<FailedDelivery[]>;
  /** How many deliveries are in each state (counts every row: for `webhooks failed`). */
  counts(): Promise<Record<'pending' | 'delivered' | 'failed', number>>;
  /** Pending and failed deliveries, counted up to `cap`, so a metrics scrape costs the same at any size. */
  depth(options: { cap: number }): Promise<Record<'pending' | 'failed', number>>;
  /** Deletes deliveries delivered more than `olderThanMs` ago; resolves with how many. */
  prune(options: Prune): Promise<number>;
  /** Deletes deliveries that failed more than `olderThanMs` ago; resolves with how many. */
  pruneFailed(options: Prune): Promise<number>;
  /**
   * Fails (recording `error`) up to `limit` pending deliveries of these subscribers that have been due
   * for more than `olderThanMs` without a claim; resolves with the subscriber of each.
   */
  expire(
    options: Prune & { endpointIds: readonly string[]; urls: readonly string[]; error: string },
  ): Promise<Subscriber[]>;
}

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
/** An endpoint without its secrets, with its pending and failed delivery counts. */
export type EndpointSummary = Omit<StoredEndpoint, 'secret' | 'previousSecret' | 'previousSecretExpiresAt'> &
  Record<'pending' | 'failed', number>;
/** What registering an endpoint gives (`secret` sealed); its events default to DEFAULT_ENDPOINT_EVENTS. */
export type NewEndpoint = Pick<StoredEndpoint, 'id' | 'owner' | 'url' | 'description' | 'secret'> & {
  events?: PlantEventType[];
};
/** What an endpoint's update changes: the members present (`description: null` removes it). */
export type EndpointPatch = {
  events?: PlantEventType[] | undefined;
  description?: string | null | undefined;
};

/** Registered webhook endpoints. Calls (but the worker's and admin's) name the owner; others' are hidden. */
export interface WebhookEndpointStore {
  /** Registers an endpoint, unless its owner already has `maxPerOwner`: then `false`. */
  create(endpoint: NewEndpoint, options: { maxPerOwner: number }): Promise<StoredEndpoint | false>;
  /** The owner's endpoints, oldest first. */
  list(owner: string): Promise<StoredEndpoint[]>;
  /** The endpoint, if it belongs to `owner` (when given). */
  get(id: string, owner?: string): Promise<StoredEndpoint | undefined>;
  /** Those of `ids` that exist, by id, in one read (a round of webhook claims). */
  getMany(ids: readonly string[]): Promise<Map<string, StoredEndpoint>>;
  /** Changes what the patch names; `undefined` when no such endpoint. */
  update(id: string, owner: string, patch: EndpointPatch): Promise<StoredEndpoint | undefined>;
  /** Deletes the endpoint, as `get` finds it, with its deliveries; `false` when none. */
  delete(id: string, owner?: string): Promise<boolean>;
  /** Disables the endpoint and fails its pending deliveries (again if disabled: a racing create's). */
  disable(id: string, reason: EndpointDisabledReason): Promise<StoredEndpoint | undefined>;
  /** Enables a disabled endpoint (its failed deliveries stay failed). */
  enable(id: string): Promise<StoredEndpoint | undefined>;
  /** Makes `secret` current; the current one signs alongside for `overlapMs` more. */
  rotate(
    id: string,
    owner: string,
    options: { secret: string; overlapMs: number },
  ): Promise<StoredEndpoint | undefined>;
  /** Every endpoint (of `owner`, when given) with its pending and failed delivery counts. */
  summaries(options: { owner?: string }): Promise<EndpointSummary[]>;
}

/** An issued bearer token: never the secret, only its SHA-256 digest (hex). */
export type StoredToken = { name: string; digest: string; scopes: Scope[] };
/** A token as `token list` shows it. */
export type ListedToken = { name: string; scopes: Scope[]; createdAt: Date; revokedAt: Date | undefined };

/** Bearer tokens issued with `main.js token create`. */
export interface TokenStore {
  /** Adds a token; `false` when one of that name exists (revoked ones keep theirs). */
  create(token: StoredToken): Promise<boolean>;
  /** Revokes the active token (`undefined`: none) and, in the same transaction, disables its endpoints. */
  revoke(name: string): Promise<{ endpointsDisabled: number } | undefined>;
  /** Every token, revoked ones too, by name. */
  list(): Promise<ListedToken[]>;
  /** The tokens not revoked. */
  active(): Promise<StoredToken[]>;
}

/** A principal of an identity provider: the issuer and the token's subject (docs/identity.md). */
export type PrincipalId = { issuer: string; subject: string };

/** Principals of identity providers cut off with `main.js principal block` (migration 15). */
export interface PrincipalStore {
  /** Blocks it and, in the same transaction, disables its endpoints; `undefined` when it was already blocked. */
  block(principal: PrincipalId): Promise<{ endpointsDisabled: number } | undefined>;
  /** Whether it was blocked. Its endpoints stay disabled until an operator enables them. */
  unblock(principal: PrincipalId): Promise<boolean>;
  list(): Promise<(PrincipalId & { blockedAt: Date })[]>;
  /** The names (auth/jwt-names.ts) of every blocked principal. */
  blockedNames(): Promise<string[]>;
}

/** The store cannot be reached or cannot commit: nothing was acknowledged. Answered as 503. */
export class StoreUnavailableError extends Error {
  override name = 'StoreUnavailableError';
}
