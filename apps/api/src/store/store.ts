import type { NewPlant } from '@plant-store/schema';
import type { Scope } from '../auth.ts';

/** A plant as the store holds it: the spec's `Plant` plus its `id`. */
export type StoredPlant = { id: bigint; name: string; tag?: string };

/**
 * The storage contract. Every implementation answers a create only after the plant is durably
 * committed (on disk, fsync'd), and never rounds an id.
 */
export interface PlantStore {
  /**
   * Inserts a plant and, in the same transaction, one pending webhook delivery per subscriber the
   * store was opened with (a transactional outbox). Resolves `true` once both are committed, `false`
   * when the id already exists (and then nothing was enqueued).
   */
  create(plant: NewPlant): Promise<boolean>;
  /** The plant with this id, or `undefined`. */
  get(id: bigint): Promise<StoredPlant | undefined>;
  /** Deletes a plant. Resolves `true` once the deletion is committed, `false` when there was no such plant. */
  delete(id: bigint): Promise<boolean>;
  /** Plants in ascending id order, strictly after `after` when given. */
  list(options: { limit: number; after?: bigint }): Promise<StoredPlant[]>;
  /** Resolves once the store answers a query; rejects with `StoreUnavailableError` otherwise. */
  ping(): Promise<void>;
  /** The webhook outbox that `create` fills and the delivery worker drains. */
  deliveries: DeliveryOutbox;
  /** Bearer tokens issued with `main.js token create`, kept only as SHA-256 digests. */
  tokens: TokenStore;
  close(): Promise<void>;
}

/** A webhook delivery claimed for one attempt. */
export type Delivery = {
  /** The Standard Webhooks `webhook-id`: the same on every attempt of this delivery. */
  id: string;
  url: string;
  /** The body to send, exactly: the `NewPlant` JSON. */
  payload: string;
  /** Attempts so far, this one included. */
  attempts: number;
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
  /** Leases up to `limit` due pending deliveries for `leaseMs`, counting the attempt, oldest due first. */
  claim(options: { limit: number; leaseMs: number }): Promise<Delivery[]>;
  markDelivered(id: string): Promise<void>;
  /** Makes the delivery due again in `delayMs`, recording why this attempt failed. */
  retry(id: string, options: { delayMs: number; error: string }): Promise<void>;
  /** Stops retrying: the delivery is kept as failed, with the last attempt's error. */
  markFailed(id: string, error: string): Promise<void>;
  /** Failed deliveries, oldest first. */
  listFailed(options: { limit: number }): Promise<FailedDelivery[]>;
  /** How many deliveries are in each state. */
  counts(): Promise<{ pending: number; delivered: number; failed: number }>;
}

/** Scopes as stored: a comma-separated list. */
export function parseScopes(text: string): Scope[] {
  return text.split(',').filter((scope): scope is Scope => scope === 'read' || scope === 'write');
}

/** An issued bearer token as the store keeps it: never the secret, only its SHA-256 digest (hex). */
export type StoredToken = { name: string; digest: string; scopes: Scope[] };

export type TokenRecord = { name: string; scopes: Scope[]; createdAt: Date; revokedAt: Date | undefined };

export interface TokenStore {
  /** Adds a token. Resolves `false` when a token of that name exists (revoked ones keep their name). */
  create(token: StoredToken): Promise<boolean>;
  /** Revokes the active token of that name; `false` when there is none. */
  revoke(name: string): Promise<boolean>;
  /** Every token, revoked ones included, by name. */
  list(): Promise<TokenRecord[]>;
  /** The tokens that are not revoked, for verifiers. */
  active(): Promise<StoredToken[]>;
}

/** The store cannot be reached or cannot commit: nothing was acknowledged. Answered as 503. */
export class StoreUnavailableError extends Error {
  override name = 'StoreUnavailableError';
}
