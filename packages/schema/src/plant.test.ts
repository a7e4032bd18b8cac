import { describe, expect, it } from 'vitest';
import { ApiErrorSchema } from './error.ts';
import {
  MAX_NAME_LENGTH,
  MAX_TAG_LENGTH,
  NewPlantSchema,
  PLANT_FIELD_NAMES,
  PLANT_FIELDS,
  PlantPatchSchema,
  PlantSchema,
  PlantWithIdSchema,
  plantFieldsOf,
} from './plant.ts';

describe('NewPlantSchema', () => {
  it('accepts an int64 id over the whole range and strips unknown fields', () => {
    expect(NewPlantSchema.parse({ id: -(2n ** 63n), name: 'Fern', extra: 1 })).toEqual({
      id: -(2n ** 63n),
      name: 'Fern',
    });
    expect(NewPlantSchema.parse({ id: 2n ** 63n - 1n, name: 'Fern', tag: 'herb' }).tag).toBe('herb');
  });

  it.each([2n ** 63n, -(2n ** 63n) - 1n, 12, '12', true, null, 1.5])(
    'rejects id %s without coercing',
    (id) => {
      const result = NewPlantSchema.safeParse({ id, name: 'Fern' });
      expect(result.success).toBe(false);
      expect(result.error?.issues[0]).toMatchObject({
        path: ['id'],
        message: 'must be an integer from -9223372036854775808 to 9223372036854775807',
      });
    },
  );

  it('says which fields are missing or of the wrong type', () => {
    const result = NewPlantSchema.safeParse({ tag: 3 });
    expect(result.error?.issues.map((issue) => [issue.path.join('.'), issue.message])).toEqual([
      ['id', 'is required'],
      ['name', 'is required'],
      ['tag', 'must be a string'],
    ]);
    expect(NewPlantSchema.safeParse([]).error?.issues[0]?.message).toBe('must be a JSON object');
  });
});

describe('PlantSchema and ApiErrorSchema', () => {
  it('have the spec fields', () => {
    // The spec's fields, name (required) and tag, lead the table; any field added follows them.
    expect(PLANT_FIELD_NAMES.slice(0, 2)).toEqual(['name', 'tag']);
    expect([PLANT_FIELDS.name.required, PLANT_FIELDS.tag.required]).toEqual([true, false]);
    expect(Object.keys(PlantSchema.shape)).toEqual(PLANT_FIELD_NAMES);
    expect(Object.keys(NewPlantSchema.shape)).toEqual(['id', ...PLANT_FIELD_NAMES]);
    expect(Object.keys(PlantWithIdSchema.shape)).toEqual(['id', ...PLANT_FIELD_NAMES, 'version']);
    expect(Object.keys(PlantPatchSchema.shape)).toEqual(['id', ...PLANT_FIELD_NAMES]);
    expect(ApiErrorSchema.parse({ error: 400, message: 'x' })).toEqual({ error: 400, message: 'x' });
    expect(ApiErrorSchema.safeParse({ error: 2 ** 31, message: 'x' }).success).toBe(false);
  });
});

describe('text fields', () => {
  it.each([
    ['a NUL character', 'Fe\u0000rn'],
    ['an unpaired high surrogate', 'x\ud800y'],
    ['an unpaired low surrogate', '\udc00'],
  ])('reject %s in name and tag', (_, value) => {
    const message = 'must be Unicode text without NUL (U+0000) characters or unpaired surrogates';
    expect(NewPlantSchema.safeParse({ id: 1n, name: value }).error?.issues[0]).toMatchObject({
      path: ['name'],
      message,
    });
    expect(NewPlantSchema.safeParse({ id: 1n, name: 'ok', tag: value }).error?.issues[0]).toMatchObject({
      path: ['tag'],
      message,
    });
  });

  it('accept any other Unicode text, including astral characters and the empty string', () => {
    expect(NewPlantSchema.parse({ id: 1n, name: '🌿 Fern \u0001', tag: '' })).toEqual({
      id: 1n,
      name: '🌿 Fern \u0001',
      tag: '',
    });
  });
});

describe('text length', () => {
  it('allows 200 characters of name and 100 of tag, counted in code points', () => {
    expect([MAX_NAME_LENGTH, MAX_TAG_LENGTH]).toEqual([200, 100]);
    // 200 astral characters are 400 UTF-16 units: JSON Schema's maxLength counts characters.
    const plant = { id: 1n, name: '🌿'.repeat(200), tag: 'ü'.repeat(100) };
    expect(NewPlantSchema.parse(plant)).toEqual(plant);
  });

  it('names each field that is too long', () => {
    const result = NewPlantSchema.safeParse({ id: 1n, name: 'x'.repeat(201), tag: '🌿'.repeat(101) });
    expect(result.error?.issues.map((issue) => [issue.path.join('.'), issue.message])).toEqual([
      ['name', 'must be at most 200 characters'],
      ['tag', 'must be at most 100 characters'],
    ]);
  });

  it('does not limit what a store answers: it may hold plants from before the limits', () => {
    const stored = { id: 1n, name: 'x'.repeat(60_000), tag: 'y'.repeat(1_000), version: 0n };
    expect(PlantWithIdSchema.parse(stored)).toEqual(stored);
  });
});

describe('plantFieldsOf', () => {
  it('gives the fields in the table’s order, a new object without absent (undefined or null) ones', () => {
    const source = { tag: 'aroid', extra: 1, name: 'Fern', id: 1n };
    const fields = plantFieldsOf(source);
    expect(JSON.stringify(fields)).toBe('{"name":"Fern","tag":"aroid"}');
    expect(fields).not.toBe(source);
    expect(plantFieldsOf({ name: 'Fern', tag: null })).toStrictEqual({ name: 'Fern' });
    expect(plantFieldsOf({ name: 'Fern', tag: '' })).toStrictEqual({ name: 'Fern', tag: '' });
  });
});
