import { describe, expect, it } from 'vitest';
import { type EditFields, editFields, parsePlantEdit } from './plant-edit.ts';

/** The form with these fields typed, the others (any field added to PLANT_FIELDS) left empty. */
const edit = (fields: Partial<EditFields>): EditFields => ({ ...editFields(undefined), ...fields });

const fern = { id: 9223372036854775807n, name: 'Fern', tag: 'herb', version: 4n };

describe('parsePlantEdit', () => {
  it('sends only the fields edited; an emptied Tag removes the tag', () => {
    expect(parsePlantEdit(fern, edit({ name: 'Fern', tag: 'herb' }))).toEqual({ ok: true, change: {} });
    expect(parsePlantEdit(fern, edit({ name: 'Royal fern', tag: 'herb' }))).toEqual({
      ok: true,
      change: { name: 'Royal fern' },
    });
    expect(parsePlantEdit(fern, edit({ name: 'Fern', tag: '' }))).toEqual({
      ok: true,
      change: { tag: null },
    });
    const untagged = { id: 1n, name: 'Moss', version: 0n };
    expect(parsePlantEdit(untagged, editFields(untagged))).toEqual({ ok: true, change: {} });
    expect(parsePlantEdit(untagged, edit({ name: 'Moss', tag: 'bryophyte' }))).toEqual({
      ok: true,
      change: { tag: 'bryophyte' },
    });
  });

  it("names each field that fails, in the api's words", () => {
    expect(parsePlantEdit(fern, edit({ name: '', tag: 't'.repeat(101) }))).toEqual({
      ok: false,
      errors: { name: 'name is required', tag: 'tag must be at most 100 characters' },
    });
    expect(parsePlantEdit(fern, edit({ name: 'n'.repeat(201), tag: '' }))).toEqual({
      ok: false,
      errors: { name: 'name must be at most 200 characters' },
    });
  });
});
