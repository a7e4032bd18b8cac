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

describe('stringifyJson of a stored plant', () => {
  it('writes id, name, tag and version exactly, in that order, with or without a tag', () => {
    expect(stringifyJson({ id: 2n ** 63n - 1n, name: 'Fern', tag: 'green', version: 42n })).toBe(
      '{"id":9223372036854775807,"name":"Fern","tag":"green","version":42}',
    );
    expect(stringifyJson([{ id: -1n, name: 'a"b', version: 0n }])).toBe(
      '[{"id":-1,"name":"a\\"b","version":0}]',
    );
    expect(stringifyJson({ id: 1n, name: 'Fern', version: 2n, changed: ['name'] })).toBe(
      '{"id":1,"name":"Fern","version":2,"changed":["name"]}',
    );
  });
});
