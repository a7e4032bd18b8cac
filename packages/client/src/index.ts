/**
 * Clients of the Plant Store API. `createRestClient` speaks the REST API and needs only `fetch`
 * (import it from `@plant-store/client/rest` to load nothing of tRPC); `createTrpcClient` speaks
 * tRPC with the server's own types. Both throw only {@link PlantStoreError} when a call fails.
 * @module
 */

export type {
  ApiError,
  CreatedWebhookEndpoint,
  ListPlantsQuery,
  NewPlant,
  NewWebhookEndpoint,
  Plant,
  PlantEvent,
  PlantEventType,
  PlantId,
  PlantWithId,
  RotatedWebhookSecret,
  WebhookDelivery,
  WebhookEndpoint,
  WebhookEndpointDisabled,
} from '@plant-store/schema';
export { PlantStoreError, type PlantStoreErrorInit } from './errors.ts';
export {
  type CallOptions,
  createRestClient,
  type DeliveriesQuery,
  type DeliveryPage,
  type EndpointCallOptions,
  type EventsOptions,
  type PlantPage,
  type RestClient,
  type RestClientOptions,
  type WebhookEndpointsClient,
} from './rest.ts';
export type { RetryOptions } from './retry.ts';
export { createTrpcClient, type TrpcClient, type TrpcClientOptions } from './trpc.ts';
