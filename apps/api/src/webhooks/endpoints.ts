import { randomBytes } from 'node:crypto';
import type { StoredEndpoint } from '../store/contract.ts';
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
