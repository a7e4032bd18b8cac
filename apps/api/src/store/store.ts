import type { NewPlant } from '@plant-store/schema';

/** A plant as the store holds it: the spec's `Plant` plus its `id`. */
export type StoredPlant = { id: bigint; name: string; tag?: string };

/**
 * The storage contract. Every implementation answers a create only after the plant is durably
 * committed (on disk, fsync'd), and never rounds an id.
 */
export interface PlantStore {
  /** Inserts a plant. Resolves `true` once committed, `false` when the id already exists. */
  create(plant: NewPlant): Promise<boolean>;
  /** The plant with this id, or `undefined`. */
  get(id: bigint): Promise<StoredPlant | undefined>;
  /** Deletes a plant. Resolves `true` once the deletion is committed, `false` when there was no such plant. */
  delete(id: bigint): Promise<boolean>;
  /** Plants in ascending id order, strictly after `after` when given. */
  list(options: { limit: number; after?: bigint }): Promise<StoredPlant[]>;
  /** Resolves once the store answers a query; rejects with `StoreUnavailableError` otherwise. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** The store cannot be reached or cannot commit: nothing was acknowledged. Answered as 503. */
export class StoreUnavailableError extends Error {
  override name = 'StoreUnavailableError';
}
