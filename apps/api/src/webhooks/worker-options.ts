import type { Tracer } from '@opentelemetry/api';
import type { Logger } from 'pino';
import type { Standing } from '../auth/tokens.ts';
import type { WebhookConfig } from '../config/config.ts';
import type { DeliveryOutbox, WebhookEndpointStore } from '../store/contract.ts';
import type { EndpointSettings } from './endpoints.ts';
import type { outcomeRecorder } from './outcomes.ts';

export type DeliveryWorker = {
  /**
   * Stops claiming, waits up to `graceMs` for the attempts in flight, then abandons the rest: they
   * are due again at once, for another instance or the next start. Call it before closing the store.
   */
  stop(graceMs: number): Promise<void>;
};

export type DeliveryWorkerOptions = {
  outbox: DeliveryOutbox;
  config: WebhookConfig;
  log: Logger;
  /**
   * The registered endpoints, delivered to when their settings have a secrets key; without it only
   * the operator subscribers (WEBHOOK_URLS) are. `owner` says where an endpoint's owner stands
   * (principals.ts): only an active owner with `read` is delivered to.
   */
  endpoints?: {
    store: WebhookEndpointStore;
    settings: EndpointSettings;
    owner: (name: string) => Promise<Standing>;
  };
  /** prom-client's (from metrics.ts): attempts by outcome, deliveries given up, open circuit breakers. */
  metrics?: Parameters<typeof outcomeRecorder>[3] & { webhookCircuitsOpen: { set(value: number): void } };
  /** With tracing on: a CLIENT span per attempt, its `traceparent` sent to the receiver. */
  tracer?: Tracer;
};
