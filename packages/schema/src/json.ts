import { isInteger, parse, stringify } from 'lossless-json';

/**
 * Parses JSON text exactly: every integer literal becomes a `bigint` (so int64 ids keep every digit),
 * every other number a `number`. Throws `SyntaxError` on malformed text.
 */
export function parseJson(text: string): unknown {
  return parseNewPlant(text) ?? parse(text, null, parseNumber);
}

/** Serialises a value to JSON text, writing `bigint` as a plain JSON number. */
export function stringifyJson(value: unknown): string {
  const text = writeKnown(value) ?? stringify(value);
  if (text === undefined) throw new TypeError('value cannot be represented as JSON');
  return text;
}

function parseNumber(literal: string): bigint | number {
  return isInteger(literal) ? BigInt(literal) : Number(literal);
}

/**
 * The create body as clients send it: `{"id":<integer>,"name":"…"}` with an optional `"tag":"…"`,
 * in that order, strings without escapes. Anything else (other orders, escapes, more keys) is left
 * to the full parser; what this accepts, that parser reads the same way.
 */
const NEW_PLANT =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: raw control characters end the fast path (JSON strings may not hold them).
  /^[ \t\n\r]*\{[ \t\n\r]*"id"[ \t\n\r]*:[ \t\n\r]*(-?(?:0|[1-9][0-9]*))[ \t\n\r]*,[ \t\n\r]*"name"[ \t\n\r]*:[ \t\n\r]*"([^"\\\u0000-\u001f]*)"[ \t\n\r]*(?:,[ \t\n\r]*"tag"[ \t\n\r]*:[ \t\n\r]*"([^"\\\u0000-\u001f]*)"[ \t\n\r]*)?\}[ \t\n\r]*$/;

function parseNewPlant(text: string): { id: bigint; name: string; tag?: string } | undefined {
  if (text.length > 4096) return undefined;
  const match = NEW_PLANT.exec(text);
  if (match === null) return undefined;
  const [, id, name, tag] = match;
  return tag === undefined ? { id: BigInt(id!), name: name! } : { id: BigInt(id!), name: name!, tag };
}

/** What JSON.stringify escapes in a string: quotes, backslashes, control characters, surrogates. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what must be escaped.
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;

/** A string as JSON text: most need no escaping, and quoting them is cheaper than JSON.stringify. */
function writeString(text: string): string {
  return NEEDS_ESCAPE.test(text) ? JSON.stringify(text) : `"${text}"`;
}

/**
 * JSON text of the values answers are made of (plain objects, arrays, strings, finite numbers,
 * booleans, null and bigint), written directly; `undefined` for anything else (a Date, a class
 * instance, a function, a non-finite number), which lossless-json then writes. Same output as
 * lossless-json for what it accepts.
 */
function writeKnown(value: unknown): string | undefined {
  switch (typeof value) {
    case 'string':
      return writeString(value);
    case 'bigint':
      return value.toString();
    case 'number':
      return Number.isFinite(value) ? JSON.stringify(value) : undefined;
    case 'boolean':
      return value ? 'true' : 'false';
    case 'object': {
      if (value === null) return 'null';
      if (Array.isArray(value)) {
        let text = '[';
        for (let i = 0; i < value.length; i++) {
          const item = writeKnown(value[i]);
          if (item === undefined) return undefined;
          text += i === 0 ? item : `,${item}`;
        }
        return `${text}]`;
      }
      const prototype = Object.getPrototypeOf(value);
      if (prototype !== Object.prototype && prototype !== null) return undefined;
      const plant = writePlant(value);
      if (plant !== undefined) return plant;
      let text = '{';
      // for…in over a plain object: its own enumerable keys in Object.keys order, without the array.
      for (const key in value) {
        if (!Object.hasOwn(value, key)) continue;
        const member = (value as Record<string, unknown>)[key];
        if (member === undefined) continue;
        const written = writeKnown(member);
        if (written === undefined) return undefined;
        text += `${text === '{' ? '' : ','}${writeString(key)}:${written}`;
      }
      return `${text}}`;
    }
    default:
      return undefined;
  }
}

/**
 * The one shape reads answer most (`PlantWithId`: a bigint `id`, a string `name`, an optional string
 * `tag`, a bigint `version`, in that order), written without the general loop; `undefined` for any
 * other object, which that loop then writes (the same text for this shape).
 */
function writePlant(value: object): string | undefined {
  const { id, name, tag, version } = value as {
    id?: unknown;
    name?: unknown;
    tag?: unknown;
    version?: unknown;
  };
  if (typeof id !== 'bigint' || typeof name !== 'string' || typeof version !== 'bigint') return undefined;
  if (tag !== undefined && typeof tag !== 'string') return undefined;
  let keys = 0;
  for (const key in value) {
    if (
      key !== (keys === 0 ? 'id' : keys === 1 ? 'name' : keys === 2 && tag !== undefined ? 'tag' : 'version')
    )
      return undefined;
    keys++;
  }
  const text = `{"id":${id},"name":${writeString(name)}`;
  return tag === undefined
    ? `${text},"version":${version}}`
    : `${text},"tag":${writeString(tag)},"version":${version}}`;
}
