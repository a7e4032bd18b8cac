import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { budgeted, prefixRange, SCAN_ROWS } from './filtered-pages.ts';

const utf8 = (text: string) => Buffer.from(text, 'utf8');

describe('prefixRange', () => {
  it('bounds a prefix by its successor, code point by code point', () => {
    expect(prefixRange('Fern')).toStrictEqual({ low: 'Fern', high: 'Fero' });
    expect(prefixRange('a\u{10FFFF}')).toStrictEqual({ low: 'a\u{10FFFF}', high: 'b' });
    expect(prefixRange('\uD7FF')).toStrictEqual({ low: '\uD7FF', high: '\uE000' });
    expect(prefixRange('\u{10FFFF}\u{10FFFF}')).toBeUndefined();
  });

  it('holds exactly the names that start with the prefix, in UTF-8 byte order (property)', () => {
    const text = fc.string({ unit: 'grapheme', maxLength: 6 });
    fc.assert(
      fc.property(text, text, (prefix, rest) => {
        fc.pre(prefix.length > 0);
        for (const name of [prefix + rest, rest, rest + prefix]) {
          const { low, high } = prefixRange(prefix)!;
          const inside =
            Buffer.compare(utf8(name), utf8(low)) >= 0 && Buffer.compare(utf8(name), utf8(high)) < 0;
          expect(inside).toBe(name.startsWith(prefix));
        }
      }),
    );
  });
});

describe('budgeted', () => {
  const plant = { id: 3n, name: 'Moss', version: 1n };
  it('points the next page past what a page that spent its budget read', () => {
    expect(budgeted({ plants: [plant], more: false }, { seen: SCAN_ROWS, through: 90n })).toStrictEqual({
      plants: [plant],
      more: true,
      cursor: 90n,
    });
  });
  it('leaves a full page, or one that read to the end, as it is', () => {
    expect(budgeted({ plants: [plant], more: true }, { seen: SCAN_ROWS, through: 90n })).toStrictEqual({
      plants: [plant],
      more: true,
    });
    expect(budgeted({ plants: [], more: false }, { seen: SCAN_ROWS - 1, through: 90n })).toStrictEqual({
      plants: [],
      more: false,
    });
  });
});
