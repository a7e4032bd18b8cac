import {
  type Delivery,
  type FailedDelivery,
  parseScopes,
  type StoredEvent,
  type StoredPlant,
  type StoredToken,
  type TokenRecord,
} from './store.ts';

/**
 * Rows as both stores read them, and what they become. `Time` is how a store keeps a point in time:
 * SQLite as milliseconds since the epoch (a bigint, with safe integers on), PostgreSQL as a Date.
 */
type Time = Date | bigint;

export type PlantRow = { id: bigint; name: string; tag: string | null };
export type EventRow = {
  id: bigint;
  type: StoredEvent['type'];
  plant_id: bigint;
  name: string | null;
  tag: string | null;
  created_at: Time;
};
export type DeliveryRow = {
  id: string;
  url: string;
  payload: string;
  attempts: number | bigint;
  created_at: Time;
};
export type FailedRow = DeliveryRow & { last_error: string; updated_at: Time };
export type TokenRow = {
  name: string;
  digest: string;
  scopes: string;
  created_at: Time;
  revoked_at: Time | null;
};

function toDate(time: Time): Date {
  return time instanceof Date ? time : new Date(Number(time));
}

export function toPlant(row: PlantRow): StoredPlant {
  return row.tag === null ? { id: row.id, name: row.name } : { id: row.id, name: row.name, tag: row.tag };
}

export function toEvent(row: EventRow): StoredEvent {
  const createdAt = toDate(row.created_at);
  if (row.type === 'plant.deleted')
    return { id: row.id, type: row.type, plant: { id: row.plant_id }, createdAt };
  const plant = toPlant({ id: row.plant_id, name: row.name!, tag: row.tag });
  return { id: row.id, type: row.type, plant, createdAt };
}

export function toDelivery(row: DeliveryRow): Delivery {
  const { id, url, payload } = row;
  return { id, url, payload, attempts: Number(row.attempts), createdAt: toDate(row.created_at) };
}

export function toFailedDelivery(row: FailedRow): FailedDelivery {
  return { ...toDelivery(row), lastError: row.last_error, failedAt: toDate(row.updated_at) };
}

export function toTokenRecord(row: TokenRow): TokenRecord {
  return {
    name: row.name,
    scopes: parseScopes(row.scopes),
    createdAt: toDate(row.created_at),
    revokedAt: row.revoked_at === null ? undefined : toDate(row.revoked_at),
  };
}

export function toStoredToken(row: TokenRow): StoredToken {
  return { name: row.name, digest: row.digest, scopes: parseScopes(row.scopes) };
}
