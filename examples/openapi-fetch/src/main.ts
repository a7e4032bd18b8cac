/**
 * A third party's program: a client generated from the committed contract (apps/api/openapi.json)
 * with openapi-typescript, called through openapi-fetch. Run it against a running api:
 *   PLANTS_URL=http://127.0.0.1:3000 PLANTS_TOKEN=$(cat apps/api/data/api-token) \
 *     pnpm --filter @plant-store/example-openapi-fetch start
 *
 * openapi-typescript types int64 ids as `number` and openapi-fetch parses answers with JSON.parse,
 * so this program keeps its ids within ±(2^53 − 1), where a number is exact. Beyond that, use
 * @plant-store/client (bigint ids) or parse the answer text with an int64-safe parser.
 */
import createClient from 'openapi-fetch';
import type { components, paths } from './generated/plant-store.ts';

type ApiError = components['schemas']['Error'];
type PlantWithId = components['schemas']['PlantWithId'];
/** True when A and B are the same type (not merely assignable), so `any` cannot pass for either. */
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;

const token = process.env.PLANTS_TOKEN;
if (!token) {
  process.stderr.write('Set PLANTS_TOKEN to a bearer token of the api (and PLANTS_URL if not local).\n');
  process.exit(2);
}
const baseUrl = process.env.PLANTS_URL ?? 'http://127.0.0.1:3000';
const client = createClient<paths>({ baseUrl, headers: { authorization: `Bearer ${token}` } });

const describe = (status: number, error: ApiError) => `${status} ${error.error} ${error.message}`;

// Create: the body is a NewPlant, the answer a Plant.
const GREENHOUSE = [
  { id: 2001, name: 'Monstera', tag: 'aroid' },
  { id: 2002, name: 'Boston fern', tag: 'fern' },
  { id: 2003, name: 'Bird of paradise' },
];
for (const plant of GREENHOUSE) {
  const { data, error, response } = await client.POST('/plants', { body: plant });
  if (error) throw new Error(`create ${plant.id}: ${describe(response.status, error)}`);
  console.log(`created ${plant.id}: ${JSON.stringify(data)}`);
}

// A duplicate is a 409 whose body is typed as the document's Error.
const duplicate = await client.POST('/plants', { body: { id: 2001, name: 'Monstera' } });
true satisfies Equal<typeof duplicate.error, ApiError | undefined>;
if (duplicate.error === undefined) throw new Error('a duplicate create was accepted');
console.log(`duplicate 2001: ${describe(duplicate.response.status, duplicate.error)}`);

// List page by page, following the Link header's `after` cursor until there is none.
const listed: PlantWithId[] = [];
let after: number | undefined;
for (let page = 1; ; page += 1) {
  const { data, error, response } = await client.GET('/plants', { params: { query: { limit: 2, after } } });
  if (error) throw new Error(`list: ${describe(response.status, error)}`);
  listed.push(...data);
  console.log(`page ${page}: ${data.map((plant) => plant.id).join(', ')}`);
  const next = /<([^>]*)>;\s*rel="next"/.exec(response.headers.get('link') ?? '')?.[1];
  if (next === undefined) break;
  after = Number(new URL(next, baseUrl).searchParams.get('after'));
  if (!Number.isSafeInteger(after)) throw new Error(`cursor ${next} is beyond what a number holds exactly`);
}
console.log(`listed ${listed.length} plants`);

// Read one; then delete it (204, no body) and read it again (404, an Error).
const read = await client.GET('/plants/{id}', { params: { path: { id: 2002 } } });
if (read.error) throw new Error(`get 2002: ${describe(read.response.status, read.error)}`);
console.log(`got 2002: ${JSON.stringify(read.data)}`);

// Read it again with its ETag: 304 is declared (no body, its ETag typed), so it is no failure. openapi-fetch
// hands back any answer outside 2xx as `error` (here `''`, the empty body): look at the status first.
type NotModified = paths['/plants/{id}']['get']['responses'][304];
const etag: NotModified['headers']['ETag'] = read.response.headers.get('etag') ?? '';
const unchanged = await client.GET('/plants/{id}', {
  params: { path: { id: 2002 }, header: { 'If-None-Match': etag } },
});
if (unchanged.response.status !== 304) {
  throw new Error(`a conditional read of 2002 answered ${unchanged.response.status}`);
}
console.log(`unchanged 2002: ${unchanged.response.status} ${unchanged.response.headers.get('etag')}`);
const deleted = await client.DELETE('/plants/{id}', { params: { path: { id: 2002 } } });
if (deleted.error) throw new Error(`delete 2002: ${describe(deleted.response.status, deleted.error)}`);
console.log(`deleted 2002: ${deleted.response.status}`);
const gone = await client.GET('/plants/{id}', { params: { path: { id: 2002 } } });
if (gone.error === undefined) throw new Error('a deleted plant was still there');
console.log(`get 2002: ${describe(gone.response.status, gone.error)}`);

// A bad query parameter is a 400 Error too.
const bad = await client.GET('/plants', { params: { query: { limit: 0 } } });
if (bad.error === undefined) throw new Error('limit 0 was accepted');
console.log(`list with limit 0: ${describe(bad.response.status, bad.error)}`);
