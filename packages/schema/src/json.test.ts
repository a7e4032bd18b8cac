import fc from 'fast-check';
import { isInteger, parse, stringify } from 'lossless-json';
import { describe, expect, it } from 'vitest';
import { parseJson, stringifyJson } from './json.ts';

describe('parseJson', () => {
  it('parses every integer literal as an exact bigint', () => {
    expect(parseJson('{"a":9007199254740993,"b":-9223372036854775808,"c":0}')).toEqual({
      a: 9007199254740993n,
      b: -9223372036854775808n,
      c: 0n,
    });
  });

  it('parses other numbers as numbers', () => {
    expect(parseJson('[1.5,1e3,-0.25]')).toEqual([1.5, 1000, -0.25]);
  });

  it.each(['{', '{"a":1,}', '{"a":1,"a":2}', "{'a':1}", 'NaN'])('rejects %s', (text) => {
    expect(() => parseJson(text)).toThrow();
  });
});

describe('stringifyJson', () => {
  it('writes bigint as a plain JSON number, exactly', () => {
    expect(stringifyJson({ id: 9223372036854775807n, name: 'Fern' })).toBe(
      '{"id":9223372036854775807,"name":"Fern"}',
    );
  });

  it('round-trips int64 values through text', () => {
    for (const id of [-(2n ** 63n), 2n ** 53n + 1n, 2n ** 63n - 1n]) {
      expect(parseJson(stringifyJson({ id }))).toEqual({ id });
    }
  });
});

describe('the fast paths agree with lossless-json', () => {
  const fail = () => {
    throw new TypeError('not JSON');
  };
  const full = (text: string) => parse(text, null, (n) => (isInteger(n) ? BigInt(n) : Number(n)));
  const outcome = (read: () => unknown) => {
    try {
      return { value: read() };
    } catch {
      return { error: true };
    }
  };
  const space = fc.constantFrom('', ' ', '\n', '\t ', '\r\n');
  const text = fc.oneof(
    fc.string(),
    fc.string({ unit: 'binary' }),
    // Any UTF-16 code unit, lone surrogates included.
    fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((code) => String.fromCharCode(code)) }),
    fc.constantFrom('Fern', '', 'a"b', 'a\\b', 'ü 🌿', '\u0000', '\u001f', '\u2028', '\ud800'),
  );
  const integer = fc.oneof(
    fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }).map(String),
    fc.constantFrom('0', '-0', '01', '-01', '1e3', '1.5', '9223372036854775807'),
  );

  it('parses create bodies, and whatever resembles them, exactly as the full parser does', {
    timeout: 60_000,
  }, () => {
    fc.assert(
      fc.property(
        fc.tuple(integer, text, fc.option(text), fc.array(space, { minLength: 12, maxLength: 12 })),
        fc.constantFrom('"id"', '"name"', '"tag"', '"iD"'),
        ([id, name, tag, s], firstKey) => {
          const body =
            `${s[0]}{${s[1]}${firstKey}${s[2]}:${s[3]}${id}${s[4]},${s[5]}"name"${s[6]}:${JSON.stringify(name)}` +
            (tag === null ? '' : `${s[7]},${s[8]}"tag"${s[9]}:${s[10]}${JSON.stringify(tag)}`) +
            `}${s[11]}`;
          expect(outcome(() => parseJson(body))).toStrictEqual(outcome(() => full(body)));
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('writes answers exactly as lossless-json writes them', { timeout: 60_000 }, () => {
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
        // stringifyJson throws where lossless-json answers undefined (nothing to write).
        const oracle = () => stringify(v) ?? fail();
        expect(outcome(() => stringifyJson(v))).toStrictEqual(outcome(oracle));
      }),
      { numRuns: 2000 },
    );
  });

  it('writes plants, and objects that resemble them, exactly as lossless-json writes them', () => {
    // Keys of the plant shape (and near misses) in any order, with values of the right type or not.
    const key = fc.constantFrom('id', 'name', 'tag', 'ID', 'other');
    const member = fc.oneof(
      text,
      fc.bigInt({ min: -(2n ** 64n), max: 2n ** 64n }),
      fc.constant(undefined),
      fc.integer(),
    );
    const plantLike = fc.oneof(
      fc.record(
        { id: fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), name: text, tag: text },
        { requiredKeys: ['id', 'name'] },
      ),
      fc.array(fc.tuple(key, member), { maxLength: 4 }).map((entries) => Object.fromEntries(entries)),
    );
    fc.assert(
      fc.property(fc.array(plantLike, { maxLength: 3 }), (plants) => {
        expect(stringifyJson(plants)).toBe(stringify(plants));
      }),
      { numRuns: 2000 },
    );
  });
});

describe('stringifyJson of a stored plant', () => {
  it('writes id, name, tag and version exactly, in that order, with or without a tag', () => {
    expect(stringifyJson({ id: 2n ** 63n - 1n, name: 'Fern', tag: 'green', version: 42n })).toBe(
      '{"id":9223372036854775807,"name":"Fern","tag":"green","version":42}',
    );
    expect(stringifyJson([{ id: -1n, name: 'a"b', version: 0n }])).toBe(
      '[{"id":-1,"name":"a\\"b","version":0}]',
    );
    // Another shape goes through the general writer, to the same text.
    expect(stringifyJson({ id: 1n, name: 'Fern', version: 2n, changed: ['name'] })).toBe(
      '{"id":1,"name":"Fern","version":2,"changed":["name"]}',
    );
  });
});
