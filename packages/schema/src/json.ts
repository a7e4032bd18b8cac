import { isInteger, parse, stringify } from 'lossless-json';

/**
 * Parses JSON text exactly: every integer literal becomes a `bigint` (so int64 ids keep every digit),
 * every other number a `number`. Throws `SyntaxError` on malformed text.
 */
export function parseJson(text: string): unknown {
  return parse(text, null, parseNumber);
}

/** Serialises a value to JSON text, writing `bigint` as a plain JSON number. */
export function stringifyJson(value: unknown): string {
  const text = stringify(value);
  if (text === undefined) throw new TypeError('value cannot be represented as JSON');
  return text;
}

function parseNumber(literal: string): bigint | number {
  return isInteger(literal) ? BigInt(literal) : Number(literal);
}
