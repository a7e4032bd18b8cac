import type { NewPlant } from '@plant-store/schema';
import superjson from 'superjson';
import { describe, expect, it } from 'vitest';
import { type PlantReplacement, replacementOf, superjsonInput } from '../../src/trpc-batch.ts';

describe('superjsonInput', () => {
  it.each([
    { id: 1n, name: 'Fern' },
    { id: -(2n ** 63n), name: 'Min', tag: '' },
    { id: 2n ** 63n - 1n, name: 'Max "quoted"\n🌿', tag: 'herb' },
    replacementOf({ id: 7n, name: 'No tag any more' }),
  ])('is what superjson.serialize gives for %o', (plant: NewPlant | PlantReplacement) => {
    expect(superjsonInput(plant)).toStrictEqual(superjson.serialize(plant));
  });
});
