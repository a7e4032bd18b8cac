import { describe, expect, it } from 'vitest';
import { plantFieldMigration } from './migrations.ts';

describe('plantFieldMigration', () => {
  it("adds an optional field's column to plants and plant_events, the same SQL in both dialects", () => {
    expect(plantFieldMigration(15, 'tag')).toStrictEqual({
      version: 15,
      name: 'add the plant field tag',
      up: 'ALTER TABLE plants ADD COLUMN tag TEXT; ALTER TABLE plant_events ADD COLUMN tag TEXT;',
      down: 'ALTER TABLE plants DROP COLUMN tag; ALTER TABLE plant_events DROP COLUMN tag;',
    });
  });

  it('refuses a required field: the rows stored before it would have none', () => {
    expect(() => plantFieldMigration(15, 'name')).toThrow(
      'plantFieldMigration adds optional fields only (name is required)',
    );
  });
});
