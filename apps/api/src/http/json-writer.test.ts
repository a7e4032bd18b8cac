import { stringifyJson } from '@plant-store/schema';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { writeJson } from './json-writer.ts';

/**
 * writeJson writes answers itself instead of through lossless-json (`stringifyJson`), kept by the
 * rule of docs/architecture.md (Going around a library). Whatever the value, it must write what
 * lossless-json writes; when a lossless-json upgrade writes something otherwise, this fails.
 */
const RULE =
  'writeJson no longer writes what lossless-json writes: make http/json-writer.ts follow, or go back to stringifyJson (docs/architecture.md, Going around a library)';

const outcome = (write: () => unknown) => {
  try {
    return { value: write() };
  } catch {
    return { error: true };
  }
};
const text = fc.oneof(
  fc.string(),
  // Any UTF-16 code unit, lone surrogates included.
  fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((code) => String.fromCharCode(code)) }),
  fc.constantFrom('Fern', '', 'a"b', 'a\\b', 'ü 🌿', '\u0000', '\u001f', '\u2028', '\ud800'),
);

describe('writeJson', () => {
  it('writes every value as lossless-json does', { timeout: 60_000 }, () => {
    const leaf = fc.oneof(
      text,
      fc.bigInt({ min: -(2n ** 64n), max: 2n ** 64n }),
      fc.double(),
      fc.boolean(),
      fc.constant(null),
      fc.constant(undefined),
      fc.date({ noInvalidDate: true }),
    );
    const value = fc.letrec((tie) => ({
      node: fc.oneof({ depthSize: 'small' }, leaf, fc.array(tie('node')), fc.dictionary(text, tie('node'))),
    })).node;
    fc.assert(
      fc.property(value, (v) => {
        expect(
          outcome(() => writeJson(v)),
          RULE,
        ).toStrictEqual(outcome(() => stringifyJson(v)));
      }),
      { numRuns: 2000 },
    );
  });

  it('writes plants, and objects that resemble them, as lossless-json does', () => {
    // Keys of the plant shape (and near misses) in any order, with values of the right type or not.
    const key = fc.constantFrom('id', 'name', 'tag', 'version', 'ID', 'notes');
    const member = fc.oneof(
      text,
      fc.bigInt({ min: -(2n ** 64n), max: 2n ** 64n }),
      fc.constant(undefined),
      fc.integer(),
    );
    const plantLike = fc.oneof(
      fc.record(
        {
          id: fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
          name: text,
          tag: text,
          version: fc.bigInt(),
        },
        { requiredKeys: ['id', 'name', 'version'] },
      ),
      fc.array(fc.tuple(key, member), { maxLength: 5 }).map((entries) => Object.fromEntries(entries)),
    );
    fc.assert(
      fc.property(fc.array(plantLike, { maxLength: 3 }), (plants) => {
        expect(writeJson(plants), RULE).toBe(stringifyJson(plants));
      }),
      { numRuns: 2000 },
    );
  });

  it('writes a page of plants as lossless-json does', () => {
    const page = {
      plants: [
        { id: 2n ** 63n - 1n, name: 'Fern', tag: 'green', version: 42n },
        { id: -(2n ** 63n), name: 'a"b\n', version: 1n },
      ],
      next: null,
    };
    expect(writeJson(page), RULE).toBe(stringifyJson(page));
  });
});
