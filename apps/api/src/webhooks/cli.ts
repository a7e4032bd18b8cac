import { parseJson, stringifyJson } from '@plant-store/schema';
import type { DeliveryOutbox, WebhookEndpointStore } from '../store/store.ts';
import { redactUrl } from './send.ts';

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
