import fc from 'fast-check';

/**
 * fast-check arbitraries from the JSON Schemas of an OpenAPI 3.1 document: values a schema admits
 * (`valid`), at its bounds included, and values it refuses (`invalid`), each refused for one reason.
 * Integers are `bigint` (int64 ids are exact), to be written with an exact JSON writer. What the
 * document says of text in words (no NUL) holds for every string made here.
 */

// biome-ignore lint/suspicious/noExplicitAny: JSON Schemas are read as they come
export type Schema = Record<string, any>;

/** Where a value goes: a header holds printable ASCII only; the rest any Unicode text. */
export type Place = 'body' | 'query' | 'path' | 'header';

const INT64 = { min: -(2n ** 63n), max: 2n ** 63n - 1n };
const INT32 = { min: -(2n ** 31n), max: 2n ** 31n - 1n };

/** Code points for text: mostly ASCII, some from the rest of Unicode; never NUL or a surrogate. */
const textCodePoint = fc.oneof(
  { weight: 4, arbitrary: fc.integer({ min: 0x20, max: 0x7e }) },
  { weight: 1, arbitrary: fc.integer({ min: 0x01, max: 0xd7ff }) },
  { weight: 1, arbitrary: fc.integer({ min: 0xe000, max: 0x10ffff }) },
);
const asciiCodePoint = fc.integer({ min: 0x21, max: 0x7e });

/** A string of `min` to `max` code points (JSON Schema's `minLength`/`maxLength` count code points). */
function text(place: Place, min: number, max: number): fc.Arbitrary<string> {
  const codePoint = place === 'header' ? asciiCodePoint : textCodePoint;
  // Both bounds often: they are where a document and a server disagree.
  const length = fc.oneof(fc.constantFrom(min, max), fc.integer({ min, max: Math.min(max, min + 20) }));
  return length.chain((n) =>
    fc.array(codePoint, { minLength: n, maxLength: n }).map((points) => String.fromCodePoint(...points)),
  );
}

export class SchemaArbitraries {
  constructor(private readonly document: Schema) {}

  /** The schema a `$ref` names, or the schema itself. */
  resolve(schema: Schema): Schema {
    if (typeof schema.$ref !== 'string') return schema;
    const path = schema.$ref.replace(/^.*#\//, '').split('/');
    // biome-ignore lint/suspicious/noExplicitAny: walking the document
    return this.resolve(path.reduce((node: any, key: string) => node[key], this.document));
  }

  /** Values `schema` admits. */
  valid(schema: Schema, place: Place = 'body'): fc.Arbitrary<unknown> {
    const s = this.resolve(schema);
    if ('const' in s) return fc.constant(s.const);
    if (Array.isArray(s.enum)) return fc.constantFrom(...s.enum);
    const alternatives = s.anyOf ?? s.oneOf;
    if (alternatives) return fc.oneof(...alternatives.map((one: Schema) => this.valid(one, place)));
    switch (s.type) {
      case 'null':
        return fc.constant(null);
      case 'boolean':
        return fc.boolean();
      case 'integer': {
        const { min, max } = integerRange(s);
        return fc.oneof(
          fc.constantFrom(min, max),
          fc.bigInt({ min, max }),
          fc.bigInt({ min: 0n, max: 100n }).filter((n) => n >= min && n <= max),
        );
      }
      case 'number':
        return fc.double({ noNaN: true, noDefaultInfinity: true, min: s.minimum, max: s.maximum });
      case 'string':
        if (s.pattern) {
          return fc
            .stringMatching(new RegExp(s.pattern))
            .filter((value) => [...value].length <= (s.maxLength ?? Number.POSITIVE_INFINITY));
        }
        if (s.format === 'date-time')
          return fc.date({ noInvalidDate: true }).map((date) => date.toISOString());
        return text(place, s.minLength ?? 0, s.maxLength ?? 40);
      case 'array': {
        const items = this.valid(s.items ?? {}, place);
        return fc.array(items, {
          minLength: s.minItems ?? 0,
          maxLength: s.maxItems ?? Math.max(3, s.minItems ?? 0),
        });
      }
      case 'object':
        return this.validObject(s);
      default:
        return fc.oneof(fc.string(), fc.integer(), fc.boolean());
    }
  }

  private validObject(s: Schema): fc.Arbitrary<Record<string, unknown>> {
    const required = new Set<string>(s.required ?? []);
    const members = Object.entries<Schema>(s.properties ?? {}).map(([name, property]) =>
      required.has(name)
        ? this.valid(property).map((value) => [[name, value]])
        : fc
            .option(this.valid(property), { nil: undefined })
            .map((value) => (value === undefined ? [] : [[name, value]])),
    );
    // A member the schema does not name is ignored where it allows more (and refused where not).
    const extra =
      s.additionalProperties === false ? fc.constant([]) : fc.constantFrom([], [['unknownMember', 1n]]);
    return fc
      .tuple(...members, extra)
      .map((parts) => Object.fromEntries(parts.flat() as [string, unknown][]));
  }

  /**
   * Values `schema` refuses, each for one reason: past a bound, the wrong type, not a member;
   * `undefined` when it refuses nothing that can be sent there (a header that is any string).
   */
  invalid(schema: Schema, place: Place = 'body'): fc.Arbitrary<unknown> | undefined {
    const s = this.resolve(schema);
    const wrongType = place === 'body' ? wrongTypeFor(s) : [];
    const reasons: fc.Arbitrary<unknown>[] = [];
    const alternatives = s.anyOf ?? s.oneOf;
    if (alternatives) {
      // Invalid for every alternative: only what no alternative admits.
      const refused = alternatives.map((one: Schema) => this.resolve(one));
      if (refused.every((one: Schema) => one.type !== 'object')) {
        reasons.push(
          ...refused
            .filter((one: Schema) => one.type === 'string' && one.maxLength !== undefined)
            .map((one: Schema) => text(place, one.maxLength + 1, one.maxLength + 1)),
        );
      }
      if (!refused.some((one: Schema) => one.type === 'integer'))
        reasons.push(fc.constant(place === 'body' ? 1n : '1'));
      return reasons.length > 0 ? fc.oneof(...reasons) : undefined;
    }
    if ('const' in s || Array.isArray(s.enum)) reasons.push(fc.constant('not-a-member'));
    switch (s.type) {
      case 'integer': {
        const { min, max } = integerRange(s);
        reasons.push(fc.constantFrom(min - 1n, max + 1n));
        reasons.push(fc.constantFrom(...(place === 'body' ? [1.5, '12'] : ['1.5', 'x', '01', '+1'])));
        break;
      }
      case 'string':
        if (s.maxLength !== undefined) reasons.push(text(place, s.maxLength + 1, s.maxLength + 1));
        if ((s.minLength ?? 0) > 0) reasons.push(text(place, 0, s.minLength - 1));
        if (s.pattern) {
          const pattern = new RegExp(s.pattern);
          reasons.push(
            fc.constantFrom('x', '!', 'we_', 'msg_0', '"', 'a b').filter((value) => !pattern.test(value)),
          );
        }
        break;
      case 'array':
        if ((s.minItems ?? 0) > 0) reasons.push(fc.constant(place === 'query' ? [''] : []));
        if (s.items) {
          const item = this.invalid(s.items, place);
          if (item) reasons.push(item.map((value) => [value]));
        }
        break;
      case 'object':
        reasons.push(this.invalidObject(s));
        break;
    }
    reasons.push(...wrongType.map((value) => fc.constant(value)));
    return reasons.length > 0 ? fc.oneof(...reasons) : undefined;
  }

  private invalidObject(s: Schema): fc.Arbitrary<unknown> {
    const properties = Object.entries<Schema>(s.properties ?? {});
    const base = this.validObject(s);
    const reasons: fc.Arbitrary<unknown>[] = [fc.constantFrom('not an object', [], null)];
    for (const name of s.required ?? []) {
      reasons.push(
        base.map((value) => Object.fromEntries(Object.entries(value).filter(([key]) => key !== name))),
      );
    }
    for (const [name, property] of properties) {
      const wrong = this.invalid(property);
      if (wrong) reasons.push(fc.tuple(base, wrong).map(([value, member]) => ({ ...value, [name]: member })));
    }
    if (s.additionalProperties === false)
      reasons.push(base.map((value) => ({ ...value, unknownMember: 1n })));
    return fc.oneof(...reasons);
  }
}

/** An integer schema's range: its `minimum`/`maximum`, else its format's. */
export function integerRange(s: Schema): { min: bigint; max: bigint } {
  const range = s.format === 'int32' ? INT32 : INT64;
  return {
    min: s.minimum !== undefined ? BigInt(s.minimum) : range.min,
    max: s.maximum !== undefined ? BigInt(s.maximum) : range.max,
  };
}

function wrongTypeFor(s: Schema): unknown[] {
  switch (s.type) {
    case 'string':
      return [1n, true, null, ['x']];
    case 'integer':
      return ['1', true, null];
    case 'array':
      return ['x', 1n, { 0: 'x' }];
    case 'object':
      return [];
    default:
      return [];
  }
}
