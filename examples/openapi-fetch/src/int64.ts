/**
 * JavaScript and int64, with the generated client: the recipe of docs/api.md ("JavaScript and
 * int64"). openapi-typescript types int64 as `number`, and a `number` holds integers exactly only
 * within ±(2^53 − 1). So: write ids as `bigint`, send bodies with an exact JSON writer
 * (`bodySerializer`), read answers as text and parse them exactly (`parseAs: 'text'`), and check the
 * create answer's `Content-Location`, which names the id the server stored.
 */
import { isInteger, parse, stringify } from 'lossless-json';
import createClient from 'openapi-fetch';
import type { components, paths } from './generated/plant-store.ts';

/** A schema's type with its int64 members as `bigint` (the generated types say `number`). */
type Exact<T> = { [K in keyof T]: K extends 'id' | 'version' ? bigint : T[K] };
type PlantWithId = Exact<components['schemas']['PlantWithId']>;

/** An id as the generated types take it: the same digits, sent exactly (bodySerializer, String()). */
const int64 = (id: bigint) => id as unknown as number;
/** Integers as bigint, other numbers as number. */
const parseExact = (text: string) => parse(text, null, (n) => (isInteger(n) ? BigInt(n) : Number(n)));

const client = createClient<paths>({
  baseUrl: process.env.PLANTS_URL ?? 'http://127.0.0.1:3000',
  headers: { authorization: `Bearer ${process.env.PLANTS_TOKEN}` },
  // JSON.stringify throws on a bigint; lossless-json writes it as a plain JSON number.
  bodySerializer: (body) => stringify(body) ?? '',
});

// The trap: a number literal beyond 2^53 is rounded before any request is made.
// biome-ignore lint/correctness/noPrecisionLoss: the loss is what this shows.
const rounded = await client.POST('/plants', { body: { id: 9007199254740993, name: 'Rounded' } });
console.log(`number 9007199254740993 stored as ${rounded.response.headers.get('content-location')}`);

// The recipe: a bigint, written exactly; Content-Location confirms which id was stored.
const id = 9007199254740993n;
const created = await client.POST('/plants', { body: { id: int64(id), name: 'Exact' } });
const location = created.response.headers.get('content-location');
if (location !== `/plants/${id}`) throw new Error(`stored as ${location}, not /plants/${id}`);
console.log(`bigint ${id} stored as ${location}`);

// Read it back as text (path parameters are written with String(), exact for a bigint) and parse exactly.
const read = await client.GET('/plants/{id}', { params: { path: { id: int64(id) } }, parseAs: 'text' });
if (read.error !== undefined) throw new Error(`get ${id}: ${read.response.status}`);
const plant = parseExact(read.data) as PlantWithId;
console.log(`read back ${plant.id} ${plant.name}: ${plant.id === id ? 'exact' : 'rounded'}`);
