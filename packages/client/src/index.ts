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
  PlantFieldName,
  PlantId,
  PlantPatch,
  PlantVersion,
  PlantWithId,
  RotatedWebhookSecret,
  UpdatePlantInput,
  WebhookDelivery,
  WebhookEndpoint,
  WebhookEndpointDisabled,
  WebhookEndpointPatch,
} from '@plant-store/schema';
export { isPreconditionFailed, PlantStoreError, type PlantStoreErrorInit } from './errors.ts';
export {
  type CallOptions,
  type ConditionalOptions,
  type CreatedPlant,
  createRestClient,
  type DeliveriesQuery,
  type DeliveryPage,
  type EndpointCallOptions,
  type EventsOptions,
  type GetOptions,
  type NotModified,
  type PlantPage,
  type PlantWithEtag,
  type RestClient,
  type RestClientOptions,
  type WebhookEndpointsClient,
} from './rest.ts';
export type { RetryOptions } from './retry.ts';
export { allPlants, createTrpcClient, type TrpcClient, type TrpcClientOptions } from './trpc.ts';
