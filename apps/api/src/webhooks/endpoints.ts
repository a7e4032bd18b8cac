import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { Standing } from '../auth/tokens.ts';
import type { StoredEndpoint, WebhookEndpointStore } from '../store/contract.ts';
import type { EndpointResolver } from './dns.ts';
import type { SecretBox } from './secrets.ts';
import { type Signer, webhookSigner } from './send.ts';
import type { UrlPolicy } from './ssrf.ts';

/** What the endpoint operations and the delivery worker need besides the store. */
export type EndpointSettings = {
  /**
   * Seals and opens endpoint secrets; `undefined` when there is no secrets key (PostgreSQL without
   * WEBHOOK_SECRETS_KEY): then every endpoint operation answers 503 and endpoints are not delivered to.
   */
  box: SecretBox | undefined;
  /** Which URLs and addresses endpoints may use (WEBHOOK_ALLOW_PRIVATE_URLS). */
  policy: UrlPolicy;
  /** Most endpoints per token (WEBHOOK_ENDPOINTS_PER_TOKEN). */
  perToken: number;
  /** How long a rotated-out secret keeps signing (WEBHOOK_SECRET_OVERLAP_MS). */
  overlapMs: number;
  /** Most pending deliveries an endpoint may have for ping and redeliver to add one (WEBHOOK_PENDING_PER_ENDPOINT). */
  pendingPerEndpoint: number;
  /** Resolves endpoints' host names, at registration and for deliveries, within the lookup caps. */
  resolver: EndpointResolver;
  /** Bound on one lookup (WEBHOOK_DNS_TIMEOUT_MS). */
  dnsTimeoutMs: number;
};

/** A new endpoint id: `we_` and 24 hex digits. */
export function newEndpointId(): string {
  return `we_${randomBytes(12).toString('hex')}`;
}

/**
 * Signs an endpoint's deliveries with its secrets: the current one, and the previous one too until
 * it expires (judged when each attempt is signed), each `v1,…` signature space-separated in one
 * `webhook-signature` value as Standard Webhooks allows.
 */
export function endpointSigner(endpoint: StoredEndpoint, box: SecretBox, now = () => Date.now()): Signer {
  const current = webhookSigner(box.open(endpoint.secret, endpoint.id));
  if (endpoint.previousSecret === null || endpoint.previousSecretExpiresAt === null) return current;
  const previous = webhookSigner(box.open(endpoint.previousSecret, endpoint.id));
  const until = endpoint.previousSecretExpiresAt.getTime();
  return (id, timestamp, payload) => {
    const signature = current(id, timestamp, payload);
    return now() < until ? `${signature} ${previous(id, timestamp, payload)}` : signature;
  };
}

/**
 * Whether an endpoint must get nothing now. A disabled one never does: its pending deliveries,
 * which a create enqueued as it was being disabled, are failed. An enabled one whose owner is no
 * longer an active token with `read` is disabled here, for good, the same way. While the
 * owner's standing is unknown (issued tokens stale), nothing is sent and nothing disabled.
 */
export async function withheld(
  endpoint: StoredEndpoint,
  endpoints: { store: WebhookEndpointStore; owner: (name: string) => Promise<Standing> },
  log: Logger,
): Promise<boolean> {
  if (endpoint.disabled !== null) {
    await endpoints.store.disable(endpoint.id, endpoint.disabled.reason);
    return true;
  }
  const owner = await endpoints.owner(endpoint.owner);
  if (owner.state === 'unknown') return true;
  if (owner.state === 'active' && owner.scopes.includes('read')) return false;
  const reason = owner.state === 'active' ? 'token_lacks_read' : 'token_inactive';
  await endpoints.store.disable(endpoint.id, reason);
  log.warn({ endpointId: endpoint.id, owner: endpoint.owner, reason }, 'webhook endpoint disabled');
  return true;
}
