import { describe, expectTypeOf, it } from 'vitest';
import {
  allPlants,
  type CreatedPlant,
  type CreatedWebhookEndpoint,
  createRestClient,
  createTrpcClient,
  type DeliveryPage,
  type NewPlant,
  type NotModified,
  type Plant,
  type PlantEvent,
  type PlantPage,
  type PlantWithEtag,
  type PlantWithId,
  type RotatedWebhookSecret,
  type WebhookDelivery,
  type WebhookEndpoint,
} from '../../src/index.ts';

// Type-level only: these clients never send a request. `tsc --noEmit` (the typecheck script) fails
// if a `@ts-expect-error` line below stops being an error.
const options = { baseUrl: 'http://127.0.0.1:9', token: 'unused' };

describe('client types', () => {
  it('tRPC: plants.create takes a NewPlant with a bigint id and resolves to a Plant', () => {
    const client = createTrpcClient(options);
    expectTypeOf(client.plants.create.mutate).toBeCallableWith({ id: 1n, name: 'Fern' });
    expectTypeOf(client.plants.create.mutate).toBeCallableWith({ id: 1n, name: 'Fern', tag: 'green' });
    expectTypeOf(client.plants.create.mutate).parameter(0).toEqualTypeOf<NewPlant>();
    expectTypeOf<NewPlant['id']>().toEqualTypeOf<bigint>();
    expectTypeOf<NewPlant['name']>().toEqualTypeOf<string>();
    expectTypeOf(client.plants.create.mutate).returns.resolves.toExtend<Plant>();
  });

  it('tRPC: rejects wrong input types', () => {
    const mutate = createTrpcClient(options).plants.create.mutate;
    // @ts-expect-error a number id would lose digits: ids are bigint
    expectTypeOf(mutate).toBeCallableWith({ id: 1, name: 'Fern' });
    // @ts-expect-error name is required
    expectTypeOf(mutate).toBeCallableWith({ id: 1n });
    // @ts-expect-error tag is a string
    expectTypeOf(mutate).toBeCallableWith({ id: 1n, name: 'Fern', tag: 3 });
    // @ts-expect-error there is no such procedure
    expectTypeOf(createTrpcClient(options).plants.remove).toBeObject();
  });

  it('REST: createPlant takes a NewPlant and resolves to a Plant with its version and ETag', () => {
    const client = createRestClient(options);
    expectTypeOf(client.createPlant).toBeCallableWith({ id: -9223372036854775808n, name: 'Fern' });
    expectTypeOf(client.createPlant).returns.resolves.toEqualTypeOf<CreatedPlant>();
    expectTypeOf<CreatedPlant>().toEqualTypeOf<Plant & { version?: bigint; etag?: string }>();
  });

  it('REST: getPlant tells "not modified" apart only when asked with ifNoneMatch', () => {
    const client = createRestClient(options);
    // Never called: they would send requests.
    const plain = () => client.getPlant(1n);
    const conditional = () => client.getPlant(1n, { ifNoneMatch: '"1"' });
    expectTypeOf<ReturnType<typeof plain>>().resolves.toEqualTypeOf<PlantWithEtag>();
    expectTypeOf<ReturnType<typeof conditional>>().resolves.toEqualTypeOf<PlantWithEtag | NotModified>();
    expectTypeOf<PlantWithEtag>().toEqualTypeOf<PlantWithId & { etag: string }>();
    expectTypeOf<PlantWithId['version']>().toEqualTypeOf<bigint>();
  });

  it('REST: updatePlant takes a merge patch and one condition', () => {
    const { updatePlant, deletePlant } = createRestClient(options);
    expectTypeOf(updatePlant).toBeCallableWith(1n, { name: 'Fern' });
    expectTypeOf(updatePlant).toBeCallableWith(1n, { tag: null }, { ifMatch: '"4"' });
    expectTypeOf(updatePlant).toBeCallableWith(1n, { tag: 'x' }, { expectedVersion: 4n });
    expectTypeOf(updatePlant).returns.resolves.toEqualTypeOf<PlantWithEtag>();
    expectTypeOf(deletePlant).toBeCallableWith(1n, { expectedVersion: 4n });
    // @ts-expect-error one condition: an ETag or a version
    expectTypeOf(updatePlant).toBeCallableWith(1n, {}, { ifMatch: '"4"', expectedVersion: 4n });
    // @ts-expect-error versions are bigints
    expectTypeOf(deletePlant).toBeCallableWith(1n, { expectedVersion: 4 });
    // @ts-expect-error name cannot be removed
    expectTypeOf(updatePlant).toBeCallableWith(1n, { name: null });
  });

  it('tRPC: plants.update and plants.delete take expectedVersion; allPlants iterates PlantWithId', () => {
    const client = createTrpcClient(options);
    expectTypeOf(client.plants.update.mutate).toBeCallableWith({ id: 1n, tag: null, expectedVersion: 3n });
    expectTypeOf(client.plants.update.mutate).returns.resolves.toEqualTypeOf<PlantWithId>();
    expectTypeOf(client.plants.delete.mutate).toBeCallableWith({ id: 1n, expectedVersion: 3n });
    expectTypeOf(client.plants.list.query).toBeCallableWith({ tag: 'x', name_prefix: 'F' });
    expectTypeOf(allPlants).toBeCallableWith(client, { tag: 'x', name_prefix: 'F', limit: 10 });
    expectTypeOf(allPlants).returns.toExtend<AsyncIterable<PlantWithId>>();
    // @ts-expect-error versions are bigints
    expectTypeOf(client.plants.update.mutate).toBeCallableWith({ id: 1n, expectedVersion: 3 });
  });

  it('REST: listPlants, getPlant and deletePlant take bigint ids', () => {
    const client = createRestClient(options);
    expectTypeOf(client.listPlants).toBeCallableWith();
    expectTypeOf(client.listPlants).toBeCallableWith({ limit: 10, after: 9007199254740993n });
    expectTypeOf(client.listPlants).returns.resolves.toEqualTypeOf<PlantPage>();
    expectTypeOf<PlantPage['next']>().toEqualTypeOf<bigint | undefined>();
    expectTypeOf(client.deletePlant).returns.resolves.toEqualTypeOf<void>();
    // @ts-expect-error a number id would lose digits: ids are bigint
    expectTypeOf(client.getPlant).toBeCallableWith(1);
    // @ts-expect-error the cursor is an id: bigint
    expectTypeOf(client.listPlants).toBeCallableWith({ after: '5' });
  });

  it('REST: rejects wrong input types', () => {
    const { createPlant } = createRestClient(options);
    // @ts-expect-error a number id would lose digits: ids are bigint
    expectTypeOf(createPlant).toBeCallableWith({ id: 1, name: 'Fern' });
    // @ts-expect-error a string id is not an id
    expectTypeOf(createPlant).toBeCallableWith({ id: '1', name: 'Fern' });
    // @ts-expect-error name is required
    expectTypeOf(createPlant).toBeCallableWith({ id: 1n });
  });

  it('tRPC: plants.events is a subscription of events with bigint ids, resumable by id', () => {
    const subscribe = createTrpcClient(options).plants.events.subscribe;
    expectTypeOf(subscribe).toBeCallableWith({}, { onData: () => {} });
    expectTypeOf(subscribe).toBeCallableWith({ after: 9007199254740993n }, { onData: () => {} });
    expectTypeOf(subscribe).toBeCallableWith({ lastEventId: '42' }, { onData: () => {} });
    // @ts-expect-error the resume id is a bigint
    expectTypeOf(subscribe).toBeCallableWith({ after: 5 }, { onData: () => {} });
    // Never called: subscribing would connect.
    const typed = () =>
      createTrpcClient(options).plants.events.subscribe(
        {},
        {
          onData({ id, data }) {
            expectTypeOf(id).toEqualTypeOf<string>();
            expectTypeOf(data.id).toEqualTypeOf<bigint>();
            expectTypeOf(data.plant.id).toEqualTypeOf<bigint>();
            expectTypeOf(data.type).toEqualTypeOf<'plant.created' | 'plant.updated' | 'plant.deleted'>();
          },
        },
      );
    expectTypeOf(typed).toBeFunction();
  });

  it('REST: events iterates PlantEvent, with bigint ids', () => {
    const client = createRestClient(options);
    expectTypeOf(client.events).toBeCallableWith();
    expectTypeOf(client.events).toBeCallableWith({ after: 0n, signal: AbortSignal.timeout(1) });
    expectTypeOf(client.events).returns.toEqualTypeOf<AsyncIterable<PlantEvent>>();
    expectTypeOf<PlantEvent['id']>().toEqualTypeOf<bigint>();
    // @ts-expect-error the resume id is a bigint
    expectTypeOf(client.events).toBeCallableWith({ after: '5' });
  });

  it('tRPC: webhookEndpoints.* take and answer the schema types of the contract', () => {
    const { webhookEndpoints } = createTrpcClient(options);
    expectTypeOf(webhookEndpoints.create.mutate).toBeCallableWith({ url: 'https://example.com/hook' });
    expectTypeOf(webhookEndpoints.create.mutate).toBeCallableWith({
      url: 'https://x.example',
      description: 'd',
    });
    expectTypeOf(webhookEndpoints.create.mutate).returns.resolves.toEqualTypeOf<CreatedWebhookEndpoint>();
    expectTypeOf(webhookEndpoints.list.query).returns.resolves.toEqualTypeOf<WebhookEndpoint[]>();
    expectTypeOf(webhookEndpoints.get.query).toBeCallableWith({ id: 'we_0123456789abcdef01234567' });
    expectTypeOf(webhookEndpoints.get.query).returns.resolves.toEqualTypeOf<WebhookEndpoint>();
    expectTypeOf(webhookEndpoints.delete.mutate).toBeCallableWith({ id: 'we_0123456789abcdef01234567' });
    expectTypeOf(webhookEndpoints.update.mutate).toBeCallableWith({ id: 'we_0', events: ['plant.updated'] });
    expectTypeOf(webhookEndpoints.update.mutate).returns.resolves.toEqualTypeOf<WebhookEndpoint>();
    expectTypeOf(webhookEndpoints.rotateSecret.mutate).returns.resolves.toEqualTypeOf<RotatedWebhookSecret>();
    expectTypeOf(webhookEndpoints.deliveries.query).toBeCallableWith({
      id: 'we_0',
      limit: 10,
      before: 'msg_0',
    });
    // tRPC has no Link header: the page carries the cursor of the next one.
    expectTypeOf(webhookEndpoints.deliveries.query).returns.resolves.toEqualTypeOf<{
      deliveries: WebhookDelivery[];
      next: string | null;
    }>();
    expectTypeOf(webhookEndpoints.redeliver.mutate).toBeCallableWith({ id: 'we_0', deliveryId: 'msg_0' });
    expectTypeOf(webhookEndpoints.redeliver.mutate).returns.resolves.toEqualTypeOf<WebhookDelivery>();
    expectTypeOf(webhookEndpoints.ping.mutate).returns.resolves.toEqualTypeOf<WebhookDelivery>();
    // @ts-expect-error url is required
    expectTypeOf(webhookEndpoints.create.mutate).toBeCallableWith({ description: 'd' });
    // @ts-expect-error redeliver needs the delivery id
    expectTypeOf(webhookEndpoints.redeliver.mutate).toBeCallableWith({ id: 'we_0' });
  });

  it('REST: endpoints.* take string ids and answer the schema types', () => {
    const { endpoints } = createRestClient(options);
    expectTypeOf(endpoints.create).toBeCallableWith({ url: 'https://example.com/hook', description: 'd' });
    expectTypeOf(endpoints.create).returns.resolves.toEqualTypeOf<CreatedWebhookEndpoint>();
    expectTypeOf(endpoints.list).returns.resolves.toEqualTypeOf<WebhookEndpoint[]>();
    expectTypeOf(endpoints.get).returns.resolves.toEqualTypeOf<WebhookEndpoint>();
    expectTypeOf(endpoints.delete).returns.resolves.toEqualTypeOf<void>();
    expectTypeOf(endpoints.create).toBeCallableWith({ url: 'https://x.example', events: ['plant.deleted'] });
    expectTypeOf(endpoints.update).toBeCallableWith('we_0', { events: ['plant.created'], description: null });
    expectTypeOf(endpoints.update).returns.resolves.toEqualTypeOf<WebhookEndpoint>();
    // @ts-expect-error there is no such event type
    expectTypeOf(endpoints.update).toBeCallableWith('we_0', { events: ['plant.moved'] });
    expectTypeOf(endpoints.rotateSecret).returns.resolves.toEqualTypeOf<RotatedWebhookSecret>();
    expectTypeOf(endpoints.deliveries).toBeCallableWith('we_0', { limit: 5, before: 'msg_0' });
    expectTypeOf(endpoints.deliveries).returns.resolves.toEqualTypeOf<DeliveryPage>();
    expectTypeOf<DeliveryPage['next']>().toEqualTypeOf<string | undefined>();
    expectTypeOf(endpoints.allDeliveries).returns.toEqualTypeOf<AsyncIterable<WebhookDelivery>>();
    expectTypeOf(endpoints.redeliver).returns.resolves.toEqualTypeOf<WebhookDelivery>();
    expectTypeOf(endpoints.ping).returns.resolves.toEqualTypeOf<WebhookDelivery>();
    expectTypeOf<WebhookDelivery['attempts']>().toEqualTypeOf<number>();
    // @ts-expect-error the endpoint body needs a url
    expectTypeOf(endpoints.create).toBeCallableWith({ description: 'd' });
    // @ts-expect-error endpoint ids are strings
    expectTypeOf(endpoints.get).toBeCallableWith(1n);
  });
});
