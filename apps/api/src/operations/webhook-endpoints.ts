import {
  type CreatedWebhookEndpoint,
  CreatedWebhookEndpointSchema,
  DEFAULT_ENDPOINT_EVENTS,
  NewWebhookEndpointSchema,
  type RotatedWebhookSecret,
  RotatedWebhookSecretSchema,
  UpdateWebhookEndpointInputSchema,
  type WebhookEndpoint,
  WebhookEndpointParamsSchema,
  WebhookEndpointPatchSchema,
  WebhookEndpointSchema,
} from '@plant-store/schema';
import { z } from 'zod';
import { RequestError } from '../errors.ts';
import type { StoredEndpoint } from '../store/contract.ts';
import { type EndpointSettings, newEndpointId } from '../webhooks/endpoints.ts';
import { LookupsBusyError } from '../webhooks/lookup-slots.ts';
import { newEndpointSecret, type SecretBox } from '../webhooks/secrets.ts';
import { checkEndpointUrl, parseEndpointUrl, UnsafeUrlError } from '../webhooks/ssrf.ts';
import { defineOperation, type OperationContext, storeCall } from './operation.ts';

export const TAGS = ['webhook-endpoints'];

/** How every endpoint operation words two of the answers every operation has (operations/answers.ts). */
export const ENDPOINT_ERRORS = {
  403: 'The token lacks the webhooks scope',
  503: 'The store is unavailable, or no WEBHOOK_SECRETS_KEY is configured (PostgreSQL); retry later',
};

/** An endpoint the caller does not own answers as one that does not exist: ids cannot be probed. */
export const NOT_FOUND = {
  404: 'There is no webhook endpoint with this id among this token’s',
  400: 'The id is malformed',
};

/** A ping or redelivery past WEBHOOK_PENDING_PER_ENDPOINT. */
export const PENDING_FULL = {
  429:
    'The endpoint has the most pending deliveries allowed (WEBHOOK_PENDING_PER_ENDPOINT); or past the rate limit, ' +
    'or too many failed authentications from this address; retry after Retry-After',
};

/**
 * When to try again past the pending cap: pending deliveries leave as they are delivered or fail,
 * which no answer can predict; a minute is long enough not to spin and short enough to notice.
 */
const PENDING_RETRY_AFTER_SECONDS = 60;

export function pendingFull(id: string, max: number): never {
  throw new RequestError(
    'rate_limited',
    `Webhook endpoint ${id} has ${max} pending deliveries, the most allowed; retry once some are delivered or have failed.`,
    { headers: { 'Retry-After': String(PENDING_RETRY_AFTER_SECONDS) } },
  );
}

function noSuchEndpoint(id: string): never {
  throw new RequestError('not_found', `There is no webhook endpoint with id ${id}.`);
}

/** The endpoint settings with a secrets key, or a 503 naming the missing setting. */
export function settingsOf(ctx: OperationContext): EndpointSettings & { box: SecretBox } {
  const settings = ctx.endpoints;
  if (settings?.box === undefined) {
    throw new RequestError(
      'unavailable',
      'Webhook endpoints are unavailable: the operator has not set WEBHOOK_SECRETS_KEY, which protects their secrets.',
    );
  }
  return settings as EndpointSettings & { box: SecretBox };
}

/** The caller's endpoint, or 404. */
export async function ownEndpoint(ctx: OperationContext, id: string): Promise<StoredEndpoint> {
  return (
    (await storeCall(() => ctx.store.webhookEndpoints.get(id, ctx.principal.tokenName))) ?? noSuchEndpoint(id)
  );
}

/** The caller's endpoint, or 404; 409 when it is disabled (it gets no deliveries, a ping none either). */
export async function ownEnabledEndpoint(ctx: OperationContext, id: string): Promise<StoredEndpoint> {
  const endpoint = await ownEndpoint(ctx, id);
  if (endpoint.disabled !== null) {
    throw new RequestError(
      'conflict',
      `Webhook endpoint ${id} is disabled (${endpoint.disabled.reason}): it gets no deliveries.`,
    );
  }
  return endpoint;
}

/** 409 for ping and redeliver. */
export const DISABLED = { 409: 'The endpoint is disabled (see its `disabled`): it gets no deliveries' };

export function present(endpoint: StoredEndpoint): WebhookEndpoint {
  return {
    id: endpoint.id,
    url: endpoint.url,
    description: endpoint.description,
    createdAt: endpoint.createdAt.toISOString(),
    events: endpoint.events,
    disabled:
      endpoint.disabled === null
        ? null
        : { at: endpoint.disabled.at.toISOString(), reason: endpoint.disabled.reason },
  };
}

function tooManyEndpoints(perToken: number): never {
  throw new RequestError(
    'conflict',
    `This token already has ${perToken} webhook endpoints, the most allowed; delete one first.`,
  );
}

/** 429 when the token's own lookups fill its slots, 503 when the instance's are all taken. */
function lookupsBusy(error: LookupsBusyError, timeoutMs: number): RequestError {
  // A slot frees at the latest when a lookup in flight hits its time bound.
  const headers = { 'Retry-After': String(Math.ceil(timeoutMs / 1000)) };
  return error.scope === 'token'
    ? new RequestError(
        'rate_limited',
        'This token has the most host lookups in flight allowed (WEBHOOK_DNS_CONCURRENCY_PER_TOKEN); retry later.',
        { headers },
      )
    : new RequestError(
        'busy',
        'This instance has the most host lookups in flight allowed (WEBHOOK_DNS_CONCURRENCY); retry later.',
        { headers },
      );
}

export const createWebhookEndpoint = defineOperation({
  scope: 'webhooks',
  openapi: {
    method: 'POST',
    path: '/webhook-endpoints',
    operationId: 'createWebhookEndpoint',
    summary: 'Register a webhook endpoint',
    description:
      'Registers an endpoint of this token: from now on every event of the types in `events` (by default ' +
      'only `plant.created`, every new plant) is POSTed to it with its type in `webhook-event`, signed as ' +
      'Standard Webhooks describes with the secret in this answer, which is shown only here. The URL must be https and resolve only to public addresses. The token needs the ' +
      '`read` scope as well as `webhooks`, since the endpoint receives every plant; it is delivered to only ' +
      'while the token stays active with both (otherwise it is disabled: see `disabled`).',
    tags: TAGS,
    successDescription: 'The endpoint, with its signing secret (shown only in this answer)',
    errorResponses: {
      400: 'The body is not a NewWebhookEndpoint, or the URL is refused (not https, not public, unresolvable)',
      409: 'The token already has the most endpoints allowed (WEBHOOK_ENDPOINTS_PER_TOKEN)',
      413: 'The body is larger than the limit',
      415: 'The body is not application/json',
      429:
        'This token has the most host lookups in flight allowed (WEBHOOK_DNS_CONCURRENCY_PER_TOKEN); or past the ' +
        'rate limit, or too many failed authentications from this address; retry after Retry-After',
      ...ENDPOINT_ERRORS,
      503: 'The store is unavailable, no WEBHOOK_SECRETS_KEY is configured (PostgreSQL), or this instance has the most host lookups in flight allowed (WEBHOOK_DNS_CONCURRENCY); retry after Retry-After',
      403: 'The token lacks the webhooks scope, or the read scope (an endpoint receives every new plant)',
    },
  },
  input: NewWebhookEndpointSchema,
  output: CreatedWebhookEndpointSchema,
  async run(
    ctx,
    { url, description, events = [...DEFAULT_ENDPOINT_EVENTS] },
  ): Promise<CreatedWebhookEndpoint> {
    // An endpoint receives every new plant: what only a token that may read plants may see.
    if (!ctx.principal.scopes.includes('read')) {
      throw new RequestError('forbidden', 'This token lacks the read scope this operation needs.');
    }
    const { box, policy, perToken, resolver, dnsTimeoutMs } = settingsOf(ctx);
    const owner = ctx.principal.tokenName;
    try {
      parseEndpointUrl(url, policy);
      // The cap before any lookup, so a token at its cap makes none (the insert checks it again, atomically).
      const owned = await storeCall(() => ctx.store.webhookEndpoints.list(owner));
      if (owned.length >= perToken) tooManyEndpoints(perToken);
      await checkEndpointUrl(url, policy, resolver.forRegistration(owner), dnsTimeoutMs);
    } catch (error) {
      if (error instanceof UnsafeUrlError) throw new RequestError('bad_request', error.message);
      if (error instanceof LookupsBusyError) throw lookupsBusy(error, dnsTimeoutMs);
      throw error;
    }
    const id = newEndpointId();
    const secret = newEndpointSecret();
    const created = await storeCall(() =>
      ctx.store.webhookEndpoints.create(
        { id, owner, url, description: description ?? null, events, secret: box.seal(secret, id) },
        { maxPerOwner: perToken },
      ),
    );
    if (!created) tooManyEndpoints(perToken);
    return { ...present(created), secret };
  },
  rest: { status: 201 },
});

export const listWebhookEndpoints = defineOperation({
  scope: 'webhooks',
  openapi: {
    method: 'GET',
    path: '/webhook-endpoints',
    operationId: 'listWebhookEndpoints',
    summary: 'List webhook endpoints',
    description: 'The endpoints this token registered, oldest first (never their secrets).',
    tags: TAGS,
    successDescription: 'The token’s endpoints',
    errorResponses: ENDPOINT_ERRORS,
  },
  input: z.object({}).optional(),
  output: z.array(WebhookEndpointSchema),
  async run(ctx): Promise<WebhookEndpoint[]> {
    settingsOf(ctx);
    const endpoints = await storeCall(() => ctx.store.webhookEndpoints.list(ctx.principal.tokenName));
    return endpoints.map(present);
  },
});

export const getWebhookEndpoint = defineOperation({
  scope: 'webhooks',
  openapi: {
    method: 'GET',
    path: '/webhook-endpoints/{id}',
    operationId: 'getWebhookEndpoint',
    summary: 'Read a webhook endpoint',
    description: 'The endpoint with this id, if this token registered it (never its secret).',
    tags: TAGS,
    successDescription: 'The endpoint',
    errorResponses: { ...NOT_FOUND, ...ENDPOINT_ERRORS },
  },
  input: WebhookEndpointParamsSchema,
  output: WebhookEndpointSchema,
  async run(ctx, { id }): Promise<WebhookEndpoint> {
    settingsOf(ctx);
    return present(await ownEndpoint(ctx, id));
  },
});

export const updateWebhookEndpoint = defineOperation({
  scope: 'webhooks',
  openapi: {
    method: 'PATCH',
    path: '/webhook-endpoints/{id}',
    operationId: 'updateWebhookEndpoint',
    summary: 'Change a webhook endpoint',
    description:
      'Changes which event types the endpoint receives (`events`) or its note (`description`, null to ' +
      'remove it), by a JSON Merge Patch (`application/merge-patch+json` or `application/json`): what the ' +
      'patch leaves out stays. Events committed from then on follow the new choice; deliveries already ' +
      'enqueued are still sent.',
    tags: TAGS,
    successDescription: 'The endpoint after the change',
    errorResponses: {
      ...NOT_FOUND,
      400: 'The id is malformed, or the body is not a WebhookEndpointPatch',
      413: 'The body is larger than the limit',
      415: 'The body is not application/merge-patch+json or application/json',
      ...ENDPOINT_ERRORS,
    },
  },
  input: UpdateWebhookEndpointInputSchema,
  body: WebhookEndpointPatchSchema,
  output: WebhookEndpointSchema,
  async run(ctx, { id, events, description }): Promise<WebhookEndpoint> {
    settingsOf(ctx);
    const updated = await storeCall(() =>
      ctx.store.webhookEndpoints.update(id, ctx.principal.tokenName, { events, description }),
    );
    return present(updated ?? noSuchEndpoint(id));
  },
});

export const deleteWebhookEndpoint = defineOperation({
  scope: 'webhooks',
  openapi: {
    method: 'DELETE',
    path: '/webhook-endpoints/{id}',
    operationId: 'deleteWebhookEndpoint',
    summary: 'Delete a webhook endpoint',
    description: 'Deletes the endpoint and its deliveries: nothing more is sent to it.',
    tags: TAGS,
    successDescription: 'The endpoint was deleted',
    errorResponses: { ...NOT_FOUND, ...ENDPOINT_ERRORS },
  },
  input: WebhookEndpointParamsSchema,
  async run(ctx, { id }): Promise<void> {
    settingsOf(ctx);
    const deleted = await storeCall(() => ctx.store.webhookEndpoints.delete(id, ctx.principal.tokenName));
    if (!deleted) noSuchEndpoint(id);
  },
  rest: { status: 204 },
});

export const rotateWebhookSecret = defineOperation({
  scope: 'webhooks',
  openapi: {
    method: 'POST',
    path: '/webhook-endpoints/{id}/rotate-secret',
    operationId: 'rotateWebhookSecret',
    summary: 'Rotate a webhook endpoint’s secret',
    description:
      'Gives the endpoint a new signing secret, shown only in this answer, which signs from now on. ' +
      'The previous one keeps signing alongside it until `previousSecretExpiresAt` ' +
      '(WEBHOOK_SECRET_OVERLAP_MS, 24 hours by default): `webhook-signature` then carries both signatures, ' +
      'space-separated. Rotating again within that time drops the oldest secret.',
    tags: TAGS,
    successDescription: 'The new secret (shown only in this answer)',
    errorResponses: { ...NOT_FOUND, ...ENDPOINT_ERRORS },
  },
  input: WebhookEndpointParamsSchema,
  output: RotatedWebhookSecretSchema,
  async run(ctx, { id }): Promise<RotatedWebhookSecret> {
    const { box, overlapMs } = settingsOf(ctx);
    const secret = newEndpointSecret();
    const rotated = await storeCall(() =>
      ctx.store.webhookEndpoints.rotate(id, ctx.principal.tokenName, {
        secret: box.seal(secret, id),
        overlapMs,
      }),
    );
    if (rotated === undefined) noSuchEndpoint(id);
    return { id, secret, previousSecretExpiresAt: rotated.previousSecretExpiresAt!.toISOString() };
  },
});
