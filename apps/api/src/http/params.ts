import { INTEGER_LITERAL } from '@plant-store/schema';
import { z } from 'zod';

type Decoder = (text: string) => unknown;

/** An operation's parameter decoders by name: a Map, since the names looked up are the client's. */
export type ParamDecoders = ReadonlyMap<string, Decoder>;

/**
 * Decoders for an operation's path and query parameters, which arrive as text: a parameter
 * declared as an integer (int32 or int64) is decoded from a plain decimal literal, one declared as
 * a list from a comma-separated one (`?types=a,b`); anything else is passed on as it came, so the
 * schema rejects it with its own message. No other coercion.
 */
export function paramDecoders(schema: z.ZodType): ParamDecoders {
  if (!(schema instanceof z.ZodObject)) return new Map();
  return new Map(
    Object.entries(schema.shape as Record<string, z.ZodType>).map(([key, field]) => [key, decoderFor(field)]),
  );
}

function decoderFor(field: z.ZodType): Decoder {
  let def = field._zod.def;
  while (def.type === 'optional' || def.type === 'default') {
    def = (def as unknown as { innerType: z.ZodType }).innerType._zod.def;
  }
  if (def.type === 'array') return (text) => text.split(',');
  if (def.type === 'bigint') return (text) => (INTEGER_LITERAL.test(text) ? BigInt(text) : text);
  if (def.type === 'number') return (text) => (INTEGER_LITERAL.test(text) ? Number(text) : text);
  return (text) => text;
}

/**
 * Decodes the known parameters of one request, from its sources in order (a later one's value wins,
 * as the path's over the query's); unknown ones are ignored, whatever their name
 * (`valueOf`, `__proto__`: looked up in a Map, they never reach an object's prototype). A repeated
 * parameter is passed on as a list: one declared as a list gets every item (`?types=a&types=b` as
 * `?types=a,b`), any other is rejected.
 */
export function decodeParams(
  decoders: ParamDecoders,
  ...sources: (Record<string, string | string[] | undefined> | undefined)[]
): Record<string, unknown> {
  const decoded: Record<string, unknown> = {};
  for (const raw of sources) {
    if (raw === undefined) continue;
    for (const [key, value] of Object.entries(raw)) {
      const decode = decoders.get(key);
      if (decode === undefined || value === undefined) continue;
      decoded[key] = Array.isArray(value) ? value.flatMap(decode) : decode(value);
    }
  }
  return decoded;
}
