import { describe, expect, it } from 'vitest';
import { INTEGER_LITERAL } from './integer.ts';
import { withTag } from './tag.ts';

describe('withTag', () => {
  it('adds the tag after the other fields', () => {
    expect(JSON.stringify(withTag({ id: 1, name: 'Fern' }, 'aroid'))).toBe(
      '{"id":1,"name":"Fern","tag":"aroid"}',
    );
  });

  it('omits an absent tag, whether undefined or NULL, and keeps an empty one', () => {
    expect(withTag({ name: 'Fern' }, undefined)).toStrictEqual({ name: 'Fern' });
    expect(withTag({ name: 'Fern' }, null)).toStrictEqual({ name: 'Fern' });
    expect(withTag({ name: 'Fern' }, '')).toStrictEqual({ name: 'Fern', tag: '' });
  });
});

describe('INTEGER_LITERAL', () => {
  it('matches decimal integer literals as JSON writes them, and nothing else', () => {
    for (const text of ['0', '-0', '7', '-12', '9223372036854775807', '-9223372036854775808'])
      expect(INTEGER_LITERAL.test(text), text).toBe(true);
    for (const text of ['', '-', '+1', '007', '1.0', '1e3', ' 1', '1 ', '0x10', '١'])
      expect(INTEGER_LITERAL.test(text), text).toBe(false);
  });
});
