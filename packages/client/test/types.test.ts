import { describe, expectTypeOf, it } from 'vitest';
import {
  createRestClient,
  createTrpcClient,
  type Plant,
  type PlantEvent,
  type PlantPage,
  type PlantWithId,
} from '../src/index.ts';

// Type-level only: these clients never send a request. `tsc --noEmit` (the typecheck script) fails
// if a `@ts-expect-error` line below stops being an error.
const options = { baseUrl: 'http://127.0.0.1:9', token: 'unused' };

describe('client types', () => {
  it('tRPC: plants.create takes a NewPlant with a bigint id and resolves to a Plant', () => {
    const client = createTrpcClient(options);
    expectTypeOf(client.plants.create.mutate).toBeCallableWith({ id: 1n, name: 'Fern' });
    expectTypeOf(client.plants.create.mutate).toBeCallableWith({ id: 1n, name: 'Fern', tag: 'green' });
    expectTypeOf(client.plants.create.mutate).parameter(0).toEqualTypeOf<{
      id: bigint;
      name: string;
      tag?: string | undefined;
    }>();
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

  it('REST: createPlant takes a NewPlant and resolves to a Plant', () => {
    const client = createRestClient(options);
    expectTypeOf(client.createPlant).toBeCallableWith({ id: -9223372036854775808n, name: 'Fern' });
    expectTypeOf(client.createPlant).returns.resolves.toEqualTypeOf<Plant>();
  });

  it('REST: listPlants, getPlant and deletePlant take bigint ids', () => {
    const client = createRestClient(options);
    expectTypeOf(client.listPlants).toBeCallableWith();
    expectTypeOf(client.listPlants).toBeCallableWith({ limit: 10, after: 9007199254740993n });
    expectTypeOf(client.listPlants).returns.resolves.toEqualTypeOf<PlantPage>();
    expectTypeOf<PlantPage['next']>().toEqualTypeOf<bigint | undefined>();
    expectTypeOf(client.getPlant).returns.resolves.toEqualTypeOf<PlantWithId>();
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
            expectTypeOf(data.type).toEqualTypeOf<'plant.created' | 'plant.deleted'>();
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
});
