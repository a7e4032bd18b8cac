import { DEFAULT_ENDPOINT_EVENTS, type PlantEventType } from '@plant-store/schema';
import { type Db, statements, type Time, type Tx, toDate, toDateOrNull } from './sql.ts';
import type {
  EndpointDisabledReason,
  EndpointPatch,
  EndpointSummary,
  StoredEndpoint,
  WebhookEndpointStore,
} from './contract.ts';

/** The `last_error` of the pending deliveries an endpoint's disabling fails. */
const disabledError = (reason: EndpointDisabledReason) => `endpoint disabled (${reason})`;
/** What registering an endpoint gives (`NewEndpoint`), read back as stored. */
type Given = Pick<StoredEndpoint, 'id' | 'owner' | 'url' | 'description' | 'secret'>;
type EndpointRow = Given & {
  previous_secret: string | null;
  previous_secret_expires_at: Time | null;
  created_at: Time;
  disabled_at: Time | null;
  disabled_reason: EndpointDisabledReason | null;
  events: string;
};
type SummaryRow = EndpointRow & Record<'pending' | 'failed', number | bigint>;

function toEndpoint(row: EndpointRow): StoredEndpoint {
  const { id, owner, url, description, secret, disabled_at: at, disabled_reason: reason } = row;
  const disabled: StoredEndpoint['disabled'] =
    at === null || reason === null ? null : { at: toDate(at), reason };
  return {
    id,
    owner,
    url,
    description,
    secret,
    previousSecret: row.previous_secret,
    previousSecretExpiresAt: toDateOrNull(row.previous_secret_expires_at),
    createdAt: toDate(row.created_at),
    events: row.events.split(',') as PlantEventType[],
    disabled,
  };
}

function toSummary(row: SummaryRow): EndpointSummary {
  const { secret, previousSecret, previousSecretExpiresAt, ...endpoint } = toEndpoint(row);
  return { ...endpoint, pending: Number(row.pending), failed: Number(row.failed) };
}

const COLUMNS =
  'id, owner, url, description, secret, previous_secret, previous_secret_expires_at, created_at, disabled_at, disabled_reason, events';
/** `@owner` NULL: any owner's (the admin commands). */
const OWNED = '(CAST(@owner AS TEXT) IS NULL OR owner = @owner)';

const SQL = statements('endpoints', {
  // Counted and inserted holding the owner's lock (see `ENDPOINTS_LOCK_KEY`).
  create: `INSERT INTO webhook_endpoints (id, owner, url, description, secret, events, created_at)
    SELECT @id, @owner, @url, @description, @secret, @events, {now}
    WHERE (SELECT count(*) FROM webhook_endpoints WHERE owner = @owner) < @maxPerOwner RETURNING ${COLUMNS}`,
  list: `SELECT ${COLUMNS} FROM webhook_endpoints WHERE owner = @owner ORDER BY created_at, {seq}`,
  get: `SELECT ${COLUMNS} FROM webhook_endpoints WHERE id = @id AND ${OWNED}`,
  // `@ids`: [id] arrays, one statement however many.
  getMany: `SELECT ${COLUMNS} FROM webhook_endpoints WHERE id IN (SELECT value ->> 0 FROM {json @ids})`,
  // A member left out (NULL) keeps its value; `@clearDescription` removes the note.
  update: `UPDATE webhook_endpoints SET events = coalesce(@events, events),
      description = CASE WHEN @clearDescription = 1 THEN NULL ELSE coalesce(@description, description) END
    WHERE id = @id AND owner = @owner RETURNING ${COLUMNS}`,
  delete: `DELETE FROM webhook_endpoints WHERE id = @id AND ${OWNED}`,
  deleteDeliveries: 'DELETE FROM webhook_deliveries WHERE endpoint_id = @id',
  // An endpoint disabled already keeps its time and reason.
  disable: `UPDATE webhook_endpoints
    SET disabled_at = coalesce(disabled_at, {now}), disabled_reason = coalesce(disabled_reason, @reason)
    WHERE id = @id RETURNING ${COLUMNS}`,
  disableOwned: `UPDATE webhook_endpoints SET disabled_at = {now}, disabled_reason = 'token_revoked'
    WHERE owner = @owner AND disabled_at IS NULL RETURNING id`,
  failPending: `UPDATE webhook_deliveries SET status = 'failed', last_error = @error, updated_at = {now}
    WHERE endpoint_id = @id AND status = 'pending'`,
  enable: `UPDATE webhook_endpoints SET disabled_at = NULL, disabled_reason = NULL WHERE id = @id RETURNING ${COLUMNS}`,
  rotate: `UPDATE webhook_endpoints
    SET previous_secret = secret, previous_secret_expires_at = {now + @overlapMs}, secret = @secret
    WHERE id = @id AND owner = @owner RETURNING ${COLUMNS}`,
  summaries: `SELECT ${COLUMNS},
      (SELECT count(*) FROM webhook_deliveries AS d WHERE d.endpoint_id = e.id AND d.status = 'pending') AS pending,
      (SELECT count(*) FROM webhook_deliveries AS d WHERE d.endpoint_id = e.id AND d.status = 'failed') AS failed
    FROM webhook_endpoints AS e WHERE ${OWNED} ORDER BY created_at, {seq}`,
});

/** Held while counting and inserting an owner's endpoints, so no two instances pass the limit together. */
const ENDPOINTS_LOCK_KEY = 723491773;

/** Disables a revoked token's endpoints and fails their pending deliveries, in `tx`; resolves how many. */
export async function disableOwnedBy(tx: Tx, owner: string): Promise<number> {
  const { rows } = await tx.run<{ id: string }>(SQL.disableOwned, { owner });
  for (const { id } of rows) await tx.run(SQL.failPending, { id, error: disabledError('token_revoked') });
  return rows.length;
}

/** Registered webhook endpoints. Calls (but the worker's and admin's) name the owner; others' are hidden. */
export function webhookEndpoints(db: Db): WebhookEndpointStore {
  const first = ([row]: EndpointRow[]) => row && toEndpoint(row);
  return {
    /** Registers an endpoint (`secret` sealed), unless its owner already has `maxPerOwner`: then `false`. */
    create: (endpoint, { maxPerOwner }) =>
      db.transaction(async (tx) => {
        await tx.lock(ENDPOINTS_LOCK_KEY, endpoint.owner);
        const { events = DEFAULT_ENDPOINT_EVENTS } = endpoint;
        const params = { ...endpoint, events: events.join(','), maxPerOwner };
        return first((await tx.run<EndpointRow>(SQL.create, params)).rows) ?? false;
      }),
    list: async (owner: string) => (await db.all<EndpointRow>(SQL.list, { owner })).map(toEndpoint),
    /** The endpoint, if it belongs to `owner` (when given). */
    get: async (id: string, owner?: string) => first(await db.all<EndpointRow>(SQL.get, { id, owner })),
    /** Those of `ids` that exist, by id, in one read. */
    getMany: async (ids: readonly string[]) => {
      const rows = await db.all<EndpointRow>(SQL.getMany, { ids: JSON.stringify(ids.map((id) => [id])) });
      return new Map(rows.map((row) => [row.id, toEndpoint(row)]));
    },
    /** Changes what the patch names (`description: null` removes it); `undefined` when no such endpoint. */
    update: async (id: string, owner: string, { events, description }: EndpointPatch) => {
      const clearDescription = description === null ? 1 : 0;
      const params = { id, owner, events: events?.join(','), description, clearDescription };
      return first((await db.run<EndpointRow>(SQL.update, params)).rows);
    },
    /** Deletes the endpoint, as `get` finds it, with its deliveries; `false` when none. */
    delete: (id: string, owner?: string) =>
      db.transaction(async (tx) => {
        if ((await tx.run(SQL.delete, { id, owner })).changes === 0) return false;
        await tx.run(SQL.deleteDeliveries, { id });
        return true;
      }),
    /** Disables the endpoint and fails its pending deliveries (again if disabled: a racing create's). */
    disable: (id: string, reason: EndpointDisabledReason) =>
      db.transaction(async (tx) => {
        const endpoint = first((await tx.run<EndpointRow>(SQL.disable, { id, reason })).rows);
        if (endpoint?.disabled)
          await tx.run(SQL.failPending, { id, error: disabledError(endpoint.disabled.reason) });
        return endpoint;
      }),
    /** Enables a disabled endpoint (its failed deliveries stay failed). */
    enable: async (id: string) => first((await db.run<EndpointRow>(SQL.enable, { id })).rows),
    /** Makes `secret` current; the current one signs alongside for `overlapMs` more. */
    rotate: async (id: string, owner: string, options: { secret: string; overlapMs: number }) =>
      first((await db.run<EndpointRow>(SQL.rotate, { id, owner, ...options })).rows),
    /** Every endpoint (of `owner`, when given) with its pending and failed delivery counts. */
    summaries: async (options: { owner?: string }) =>
      (await db.all<SummaryRow>(SQL.summaries, options)).map(toSummary),
  };
}
