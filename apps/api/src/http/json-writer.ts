import { stringifyJson } from '@plant-store/schema';

/**
 * JSON text of an answer, `bigint` written as a plain number: what `stringifyJson` (lossless-json)
 * writes, written directly for the values answers are made of (plain objects, arrays, strings,
 * finite numbers, booleans, null, bigint; plants without the general loop), and by lossless-json for
 * anything else. It goes around
 * lossless-json by the rule of docs/architecture.md (Going around a library): lossless-json's
 * writer cost a 100-plant page a third of its req/s. json-writer.test.ts fails, naming the rule,
 * when the two write anything differently.
 */
export function writeJson(value: unknown): string {
  return writeKnown(value) ?? stringifyJson(value);
}

/** What JSON.stringify escapes in a string: quotes, backslashes, control characters, surrogates. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what must be escaped.
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;

/** A string as JSON text: most need no escaping, and quoting them is cheaper than JSON.stringify. */
function writeString(text: string): string {
  return NEEDS_ESCAPE.test(text) ? JSON.stringify(text) : `"${text}"`;
}

/** The JSON text of `value`, or `undefined` for what only lossless-json writes (a Date, a class instance, NaN). */
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
 * The shape most answers hold (`PlantWithId`: a bigint `id`, a string `name`, an optional string
 * `tag`, a bigint `version`, in that order), written without the general loop; `undefined` for any
 * other object, which that loop then writes to the same text. A plant with a field this does not
 * know takes the general loop: slower, never a field dropped.
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
