import { parseJson, stringifyJson } from '@plant-store/schema';
import { parseJwtPrincipalName } from '../auth/jwt-names.ts';
import { isConfiguredTokenName, isLegacyTokenName } from '../auth/tokens.ts';
import type { DeliveryOutbox, PlantStore, WebhookEndpointStore } from '../store/contract.ts';
import { redactUrl } from '../webhooks/send.ts';

/**
 * `main.js webhooks failed [--limit N]`: the deliveries that used up their attempts, oldest first,
 * one JSON object a line (`payload` is the body that was sent, ids exact), then a summary line.
 */
export async function listFailedDeliveries(
  outbox: DeliveryOutbox,
  { limit }: { limit: number },
): Promise<{ lines: string[]; summary: string }> {
  const [failed, counts] = await Promise.all([outbox.listFailed({ limit }), outbox.counts()]);
  const lines = failed.map((delivery) =>
    stringifyJson({
      webhookId: delivery.id,
      url: redactUrl(delivery.url),
      attempts: delivery.attempts,
      lastError: delivery.lastError,
      createdAt: delivery.createdAt.toISOString(),
      failedAt: delivery.failedAt.toISOString(),
      payload: parseJson(delivery.payload),
    }),
  );
  const summary = `${failed.length} of ${counts.failed} failed deliveries listed (${counts.pending} pending, ${counts.delivered} delivered)`;
  return { lines, summary };
}

/**
 * `main.js webhooks endpoints [--owner NAME]`: every registered endpoint (or one owner's), oldest
 * first, one JSON object a line, with its pending and failed deliveries; URLs redacted, never a secret.
 */
export async function listEndpoints(
  endpoints: WebhookEndpointStore,
  { owner }: { owner?: string },
): Promise<string[]> {
  const summaries = await endpoints.summaries({ owner });
  return summaries.map((endpoint) =>
    JSON.stringify({
      id: endpoint.id,
      owner: endpoint.owner,
      url: redactUrl(endpoint.url),
      description: endpoint.description,
      createdAt: endpoint.createdAt.toISOString(),
      disabled:
        endpoint.disabled === null
          ? null
          : { at: endpoint.disabled.at.toISOString(), reason: endpoint.disabled.reason },
      pending: endpoint.pending,
      failed: endpoint.failed,
    }),
  );
}

/** What an endpoint command says (on stderr) and its exit code. */
export type Outcome = { message: string; code: number };

const notFound = (id: string): Outcome => ({ message: `No webhook endpoint with id "${id}".`, code: 1 });

/** `main.js webhooks disable --id ID`: nothing more is sent to it; its pending deliveries fail. */
export async function disableEndpoint(store: PlantStore, id: string): Promise<Outcome> {
  const before = await store.webhookEndpoints.get(id);
  if (before === undefined) return notFound(id);
  if (before.disabled !== null) {
    return { message: `Webhook endpoint ${id} is already disabled (${before.disabled.reason}).`, code: 0 };
  }
  if ((await store.webhookEndpoints.disable(id, 'operator')) === undefined) return notFound(id);
  return {
    message: `Webhook endpoint ${id} disabled: nothing more is sent to it, and its pending deliveries failed.`,
    code: 0,
  };
}

/**
 * `main.js webhooks enable --id ID`: unless its owner is known here not to be an active token with
 * `read` (a name of an earlier version, or an issued token revoked or without the scope). Whether a
 * configured token's name is active only the instances know (their API_TOKENS): an endpoint whose
 * owner is not is disabled again by the first delivery round that finds it so, and sends nothing.
 */
export async function enableEndpoint(store: PlantStore, id: string): Promise<Outcome> {
  const endpoint = await store.webhookEndpoints.get(id);
  if (endpoint === undefined) return notFound(id);
  if (endpoint.disabled === null) return { message: `Webhook endpoint ${id} is not disabled.`, code: 0 };
  const refusal = await ownerRefusal(store, endpoint.owner);
  if (refusal !== undefined)
    return { message: `Webhook endpoint ${id} stays disabled: ${refusal}.`, code: 1 };
  if ((await store.webhookEndpoints.enable(id)) === undefined) return notFound(id);
  return {
    message: `Webhook endpoint ${id} enabled: new plants are delivered to it while its token "${endpoint.owner}" is active with the read scope.`,
    code: 0,
  };
}

/** Why the token of this name cannot own a delivered endpoint, as far as the store can tell. */
async function ownerRefusal({ tokens, principals }: PlantStore, owner: string): Promise<string | undefined> {
  const principal = parseJwtPrincipalName(owner);
  if (principal !== undefined) {
    const blocked = (await principals.blockedNames()).includes(owner);
    return blocked ? `its principal "${principal.subject}" of ${principal.issuer} is blocked` : undefined;
  }
  if (isLegacyTokenName(owner))
    return `its token name "${owner}" is one of an earlier version, which no token has now`;
  if (isConfiguredTokenName(owner)) return undefined;
  const token = (await tokens.list()).find((record) => record.name === owner);
  if (token === undefined) return `there is no token "${owner}"`;
  if (token.revokedAt !== undefined) return `its token "${owner}" is revoked`;
  if (!token.scopes.includes('read')) return `its token "${owner}" lacks the read scope`;
  return undefined;
}

/** `main.js webhooks delete --id ID`: the endpoint and all its deliveries. */
export async function deleteEndpoint(store: PlantStore, id: string): Promise<Outcome> {
  if (!(await store.webhookEndpoints.delete(id))) return notFound(id);
  return { message: `Webhook endpoint ${id} deleted, with its deliveries.`, code: 0 };
}
