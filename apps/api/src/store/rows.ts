import { parseScopes } from '../scopes.ts';
import type {
  Delivery,
  DeliveryEvent,
  EndpointDelivery,
  EndpointDisabled,
  EndpointDisabledReason,
  EndpointSummary,
  FailedDelivery,
  StoredEndpoint,
  StoredEvent,
  StoredPlant,
  StoredToken,
  TokenRecord,
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
  /** Read by claims only; NULL for WEBHOOK_URLS subscribers. */
  endpoint_id?: string | null;
  event?: DeliveryEvent;
};
export type EndpointDeliveryRow = {
  id: string;
  event: DeliveryEvent;
  status: EndpointDelivery['status'];
  attempts: number | bigint;
  last_response_code: number | bigint | null;
  last_error: string | null;
  next_attempt_at: Time;
  created_at: Time;
};
export type EndpointRow = {
  id: string;
  owner: string;
  url: string;
  description: string | null;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Time | null;
  created_at: Time;
  disabled_at: Time | null;
  disabled_reason: EndpointDisabledReason | null;
};
export type EndpointSummaryRow = Omit<
  EndpointRow,
  'secret' | 'previous_secret' | 'previous_secret_expires_at'
> & {
  pending: number | bigint | string;
  failed: number | bigint | string;
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
  const delivery: Delivery = {
    id,
    url,
    payload,
    attempts: Number(row.attempts),
    createdAt: toDate(row.created_at),
  };
  if (row.endpoint_id) delivery.endpoint = { id: row.endpoint_id, event: row.event ?? 'plant.created' };
  return delivery;
}

export function toEndpointDelivery(row: EndpointDeliveryRow): EndpointDelivery {
  return {
    id: row.id,
    event: row.event,
    status: row.status,
    attempts: Number(row.attempts),
    lastResponseCode: row.last_response_code === null ? null : Number(row.last_response_code),
    lastError: row.last_error,
    nextAttemptAt: row.status === 'pending' ? toDate(row.next_attempt_at) : null,
    createdAt: toDate(row.created_at),
  };
}

export function toEndpoint(row: EndpointRow): StoredEndpoint {
  return {
    id: row.id,
    owner: row.owner,
    url: row.url,
    description: row.description,
    secret: row.secret,
    previousSecret: row.previous_secret,
    previousSecretExpiresAt:
      row.previous_secret_expires_at === null ? null : toDate(row.previous_secret_expires_at),
    createdAt: toDate(row.created_at),
    disabled: toDisabled(row),
  };
}

function toDisabled(row: Pick<EndpointRow, 'disabled_at' | 'disabled_reason'>): EndpointDisabled | null {
  return row.disabled_at === null || row.disabled_reason === null
    ? null
    : { at: toDate(row.disabled_at), reason: row.disabled_reason };
}

export function toEndpointSummary(row: EndpointSummaryRow): EndpointSummary {
  return {
    id: row.id,
    owner: row.owner,
    url: row.url,
    description: row.description,
    createdAt: toDate(row.created_at),
    disabled: toDisabled(row),
    pending: Number(row.pending),
    failed: Number(row.failed),
  };
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
