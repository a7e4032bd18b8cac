// The store contract's additions for updates, versions, filters and endpoint event types, until they
// join store/store.ts (another branch is reshaping that directory right now). Operations reach the
// store through `pendingStore` meanwhile.
import type { NewPlant, PlantEventType, PlantWithId, PLANT_FIELDS } from '@plant-store/schema';
import type { Expected } from './conditions.ts';
import type {
  KeyClaim,
  KeyedAnswer,
  NewDelivery,
  PlantPage,
  PlantStore,
  StoredEndpoint,
} from './store/store.ts';

/** A field an update can change. */
export type PlantField = (typeof PLANT_FIELDS)[number];

/** What an update sets: the members present; `tag: null` removes the tag. */
export type PlantChange = { id: bigint; name?: string; tag?: string | null };

/** An update's outcome: the plant after it and the fields it changed (none: a no-op), or the version that failed `expected`. */
export type UpdateOutcome = { plant: PlantWithId; changed: PlantField[] } | { stale: bigint };

export type PendingPlantStore = Omit<PlantStore, 'create' | 'delete' | 'list' | 'webhookEndpoints'> & {
  create(
    plant: NewPlant,
    outbox?: readonly NewDelivery[],
    answer?: KeyedAnswer,
    endpointPayload?: string,
  ): Promise<bigint | false>;
  update(
    change: PlantChange,
    options?: { expected?: Expected; key?: KeyClaim },
  ): Promise<UpdateOutcome | undefined>;
  delete(id: bigint, answer?: KeyedAnswer, expected?: Expected): Promise<boolean | { stale: bigint }>;
  list(options: {
    limit: number;
    after?: bigint;
    maxBytes?: number;
    tag?: string;
    namePrefix?: string;
  }): Promise<PlantPage>;
  webhookEndpoints: Omit<PlantStore['webhookEndpoints'], 'create' | 'list' | 'get'> & {
    create(
      endpoint: Pick<StoredEndpoint, 'id' | 'owner' | 'url' | 'description' | 'secret'> & {
        events: PlantEventType[];
      },
      options: { maxPerOwner: number },
    ): Promise<PendingEndpoint | false>;
    list(owner: string): Promise<PendingEndpoint[]>;
    get(id: string, owner?: string): Promise<PendingEndpoint | undefined>;
    update(
      id: string,
      owner: string,
      patch: { events?: PlantEventType[]; description?: string | null },
    ): Promise<PendingEndpoint | undefined>;
  };
};

export type PendingEndpoint = StoredEndpoint & { events: PlantEventType[] };

export const pendingStore = (store: PlantStore): PendingPlantStore => store as unknown as PendingPlantStore;
