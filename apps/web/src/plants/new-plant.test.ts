import { describe, expect, it } from 'vitest';
import { EMPTY_NEW_PLANT, type NewPlantFields, parseNewPlant } from './new-plant.ts';

/** The form with these fields typed, the others (any field added to PLANT_FIELDS) left empty. */
const form = (fields: Partial<NewPlantFields>): NewPlantFields => ({ ...EMPTY_NEW_PLANT, ...fields });

const INT64_MESSAGE = 'must be an integer from -9223372036854775808 to 9223372036854775807';

describe('parseNewPlant', () => {
  it('gives the plant with an exact bigint id at both ends of int64, an empty tag left out', () => {
    expect(parseNewPlant(form({ id: ' 9223372036854775807 ', name: 'Fern', tag: '' }))).toEqual({
      ok: true,
      plant: { id: 9223372036854775807n, name: 'Fern' },
    });
    expect(parseNewPlant(form({ id: '-9223372036854775808', name: 'Moss', tag: 'bryophyte' }))).toEqual({
      ok: true,
      plant: { id: -9223372036854775808n, name: 'Moss', tag: 'bryophyte' },
    });
  });

  it("names each field that fails, in the api's words", () => {
    expect(parseNewPlant(form({ id: '', name: '', tag: 't'.repeat(101) }))).toEqual({
      ok: false,
      errors: {
        id: 'id is required',
        name: 'name is required',
        tag: 'tag must be at most 100 characters',
      },
    });
    for (const id of ['9223372036854775808', '1.5', '1e3', '0x10', 'twelve', '+1', '01']) {
      expect(parseNewPlant(form({ id, name: 'Fern', tag: '' }))).toEqual({
        ok: false,
        errors: { id: `id ${INT64_MESSAGE}` },
      });
    }
    expect(parseNewPlant(form({ id: '1', name: 'n'.repeat(201), tag: '' }))).toEqual({
      ok: false,
      errors: { name: 'name must be at most 200 characters' },
    });
  });
});
