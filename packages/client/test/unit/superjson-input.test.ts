import superjson from 'superjson';
import { describe, expect, it } from 'vitest';
import { superjsonInput } from '../../src/trpc-batch.ts';

describe('superjsonInput', () => {
  it.each([
    { id: 1n, name: 'Fern' },
    { id: -(2n ** 63n), name: 'Min', tag: '' },
    { id: 2n ** 63n - 1n, name: 'Max "quoted"\n🌿', tag: 'herb' },
    { id: 7n, name: 'No tag any more', tag: null },
  ])('is what superjson.serialize gives for %o', (plant) => {
    expect(superjsonInput(plant)).toStrictEqual(superjson.serialize(plant));
  });
});
