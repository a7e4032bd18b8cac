import {
  ListDeliveriesQuerySchema,
  stringifyJson,
  type WebhookDelivery,
  WebhookDeliveryParamsSchema,
  WebhookDeliverySchema,
  WebhookEndpointParamsSchema,
  type WebhookPing,
} from '@plant-store/schema';
import { z } from 'zod';
import { RequestError } from '../errors.ts';
import type { EndpointDelivery } from '../store/contract.ts';
import { newWebhookId } from '../webhooks/event.ts';
import { HEADERS } from './answers.ts';
import { defineOperation, nextPageHeaders, storeCall } from './operation.ts';
import {
  DISABLED,
  ENDPOINT_ERRORS,
  NOT_FOUND,
  ownEnabledEndpoint,
  ownEndpoint,
  PENDING_FULL,
  pendingFull,
  settingsOf,
  TAGS,
} from './webhook-endpoints.ts';

// An endpoint's deliveries: its log, a redelivery, a ping (the endpoint itself: webhook-endpoints.ts).

function presentDelivery(delivery: EndpointDelivery): WebhookDelivery {
  return {
    id: delivery.id,
    event: delivery.event,
    status: delivery.status,
    attempts: delivery.attempts,
    lastResponseCode: delivery.lastResponseCode,
    lastError: delivery.lastError,
    nextAttemptAt: delivery.nextAttemptAt?.toISOString() ?? null,
    createdAt: delivery.createdAt.toISOString(),
  };
}

export const listWebhookDeliveries = defineOperation({
  scope: 'webhooks',
  openapi: {
    method: 'GET',
    path: '/webhook-endpoints/{id}/deliveries',
    operationId: 'listWebhookDeliveries',
    summary: 'List an endpoint’s deliveries',
    description:
      'The endpoint’s deliveries, newest first, with their latest attempt, one page at a time. While more ' +
      'remain, the answer has a `Link: <…>; rel="next"` header with the next page. Delivered ones are kept ' +
      'for WEBHOOK_RETENTION_MS, failed ones for WEBHOOK_FAILED_RETENTION_MS.',
    tags: TAGS,
    successDescription: 'A page of deliveries',
    responseHeaders: z.object({ Link: HEADERS.link }),
    errorResponses: {
      ...NOT_FOUND,
      ...ENDPOINT_ERRORS,
      400: 'A bad id, limit or before parameter (before must be a delivery of this endpoint)',
    },
  },
  input: ListDeliveriesQuerySchema,
  output: z.array(WebhookDeliverySchema),
  async run(ctx, { id, limit, before }): Promise<{ deliveries: WebhookDelivery[]; next: string | null }> {
    settingsOf(ctx);
    await ownEndpoint(ctx, id);
    const page = await storeCall(() =>
      ctx.store.deliveries.listForEndpoint({ endpointId: id, limit, before }),
    );
    if (page === undefined) {
      throw new RequestError(
        'bad_request',
        `Invalid request parameters: before must be a delivery of endpoint ${id}.`,
      );
    }
    const deliveries = page.deliveries.map(presentDelivery);
    return { deliveries, next: page.more ? deliveries[deliveries.length - 1]!.id : null };
  },
  rest: {
    status: 200,
    present({ deliveries, next }, { path, input }) {
      const cursor = next === null ? null : { name: 'before', value: next };
      return { body: deliveries, headers: nextPageHeaders(path, input.limit, cursor) };
    },
  },
});

export const redeliverWebhook = defineOperation({
  scope: 'webhooks',
  openapi: {
    method: 'POST',
    path: '/webhook-endpoints/{id}/deliveries/{deliveryId}/redeliver',
    operationId: 'redeliverWebhook',
    summary: 'Deliver again',
    description:
      'Makes the delivery pending and due now, whatever its status, with a fresh schedule of attempts. It ' +
      'keeps its `webhook-id`, so a receiver that saw it already can tell. Refused (429) while the endpoint ' +
      'has WEBHOOK_PENDING_PER_ENDPOINT pending deliveries.',
    tags: TAGS,
    successDescription: 'The delivery, pending',
    errorResponses: {
      ...NOT_FOUND,
      ...ENDPOINT_ERRORS,
      ...DISABLED,
      404: 'There is no such endpoint among this token’s, or no such delivery of it',
      400: 'A malformed id or delivery id',
      ...PENDING_FULL,
    },
  },
  input: WebhookDeliveryParamsSchema,
  output: WebhookDeliverySchema,
  async run(ctx, { id, deliveryId }): Promise<WebhookDelivery> {
    const { pendingPerEndpoint } = settingsOf(ctx);
    await ownEnabledEndpoint(ctx, id);
    const delivery = await storeCall(() =>
      ctx.store.deliveries.redeliver({ id: deliveryId, endpointId: id, maxPending: pendingPerEndpoint }),
    );
    if (delivery === undefined) {
      throw new RequestError('not_found', `Webhook endpoint ${id} has no delivery with id ${deliveryId}.`);
    }
    if (delivery === 'full') pendingFull(id, pendingPerEndpoint);
    return presentDelivery(delivery);
  },
  rest: { status: 202 },
});

export const pingWebhookEndpoint = defineOperation({
  scope: 'webhooks',
  openapi: {
    method: 'POST',
    path: '/webhook-endpoints/{id}/ping',
    operationId: 'pingWebhookEndpoint',
    summary: 'Send a test event',
    description:
      'Enqueues a `webhook.ping` delivery to the endpoint (the `webhook.ping` webhook: a `WebhookPing` body), ' +
      'signed and retried like any other. Refused (429) while the endpoint has WEBHOOK_PENDING_PER_ENDPOINT ' +
      'pending deliveries.',
    tags: TAGS,
    successDescription: 'The ping delivery, pending',
    errorResponses: { ...NOT_FOUND, ...ENDPOINT_ERRORS, ...PENDING_FULL, ...DISABLED },
  },
  input: WebhookEndpointParamsSchema,
  output: WebhookDeliverySchema,
  async run(ctx, { id }): Promise<WebhookDelivery> {
    const { pendingPerEndpoint } = settingsOf(ctx);
    const endpoint = await ownEnabledEndpoint(ctx, id);
    const ping: WebhookPing = { type: 'webhook.ping', endpointId: id, timestamp: new Date().toISOString() };
    const payload = stringifyJson(ping);
    const delivery = await storeCall(() =>
      ctx.store.deliveries.enqueue(
        { id: newWebhookId(), endpointId: id, url: endpoint.url, event: 'webhook.ping', payload },
        { maxPending: pendingPerEndpoint },
      ),
    );
    if (delivery === 'full') pendingFull(id, pendingPerEndpoint);
    return presentDelivery(delivery);
  },
  rest: { status: 202 },
});
