import { plantEvents } from './events.ts';
import { type AnyOperation, isOperation } from './operation.ts';
import { createPlant, deletePlant, getPlant, listPlants, updatePlant } from './plants.ts';
import { listWebhookDeliveries, pingWebhookEndpoint, redeliverWebhook } from './webhook-deliveries.ts';
import {
  createWebhookEndpoint,
  deleteWebhookEndpoint,
  getWebhookEndpoint,
  listWebhookEndpoints,
  rotateWebhookSecret,
  updateWebhookEndpoint,
} from './webhook-endpoints.ts';

/**
 * Every operation of the api, by tRPC path (`plants.create`): the one registry. The tRPC router
 * (trpc/router.ts), the REST routes (http/rest.ts) and the OpenAPI document (http/openapi.ts) are all
 * built from it. A new operation is defined next to its kin and added here.
 */
export const operations = {
  plants: {
    create: createPlant,
    list: listPlants,
    get: getPlant,
    update: updatePlant,
    delete: deletePlant,
    events: plantEvents,
  },
  webhookEndpoints: {
    create: createWebhookEndpoint,
    list: listWebhookEndpoints,
    get: getWebhookEndpoint,
    update: updateWebhookEndpoint,
    delete: deleteWebhookEndpoint,
    rotateSecret: rotateWebhookSecret,
    deliveries: listWebhookDeliveries,
    redeliver: redeliverWebhook,
    ping: pingWebhookEndpoint,
  },
};

/** A tree of operations: operations at the leaves, namespaces in between. */
export type OperationTree = { [name: string]: AnyOperation | OperationTree };

/** The registry's operations with their dotted tRPC paths, in the order they are listed. */
export function listOperations(
  tree: OperationTree = operations as OperationTree,
  prefix = '',
): {
  path: string;
  operation: AnyOperation;
}[] {
  return Object.entries(tree).flatMap(([name, node]) =>
    isOperation(node)
      ? [{ path: prefix + name, operation: node }]
      : listOperations(node, `${prefix}${name}.`),
  );
}
