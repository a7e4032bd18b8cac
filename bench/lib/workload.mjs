// What the load generator sends: ids (unique per request) and request bodies for each scenario.
// Shared by the load worker (load.mjs) and the harness, which checks the tRPC bodies against
// superjson (run.mjs) and sends one of each before every run (lib/measure.mjs).

const M63 = (1n << 63n) - 1n;

/**
 * A bijection from a counter (0, 1, 2, …) onto signed 64-bit ids spread over [-2^62, 2^62): distinct
 * counters give distinct ids, so the ids of a run never collide with each other or with ids made
 * from another counter range (the growth bench pre-fills counters [0, N) and loads from N on).
 * Two odd multiplications mod 2^63 and two xor-shifts, all invertible.
 */
export function scatter(counter) {
  let x = BigInt(counter) & M63;
  x = (x * 0x5851f42d4c957f2dn) & M63;
  x ^= x >> 31n;
  x = (x * 0x2545f4914f6cdd1dn) & M63;
  x ^= x >> 29n;
  return x - (1n << 62n);
}

/**
 * The id for a counter value, as decimal text. `seq`: the counter + 1 (ascending, the common case
 * of a client-side sequence, appends to the B-tree); `scattered`: `scatter(counter)` (random
 * inserts all over the B-tree, full int64 range, exercises exact parsing).
 */
export function idText(mode, counter) {
  if (mode === 'seq') return String(counter + 1);
  if (mode === 'scattered') return String(scatter(counter));
  throw new Error(`unknown id mode ${mode} (seq or scattered)`);
}

export const PLANT_NAME = 'Fern';
export const PLANT_TAG = 'bench';

/** POST /plants body. */
export function restBody(id) {
  return `{"id":${id},"name":"${PLANT_NAME}","tag":"${PLANT_TAG}"}`;
}

/**
 * One tRPC input as @trpc/client sends it with the superjson transformer: what
 * `superjson.serialize({ id: BigInt(id), name, tag })` gives (superjson 2.2 adds `"v":1`).
 */
export function trpcInput(id) {
  return `{"json":{"id":"${id}","name":"${PLANT_NAME}","tag":"${PLANT_TAG}"},"meta":{"values":{"id":["bigint"]},"v":1}}`;
}

/** Throws unless `trpcInput` is what superjson itself produces, for a few ids up to the int64 ends. */
export async function checkSuperjsonFormat() {
  const { default: superjson } = await import('superjson');
  for (const id of ['1', '9223372036854775807', '-9223372036854775808', String(scatter(7))]) {
    const expected = JSON.stringify(
      superjson.serialize({ id: BigInt(id), name: PLANT_NAME, tag: PLANT_TAG }),
    );
    if (trpcInput(id) !== expected) {
      throw new Error(`the tRPC body format drifted from superjson: ${trpcInput(id)} vs ${expected}`);
    }
  }
}

/** Path of a tRPC batch of `size` creates: httpBatchLink joins one procedure path per call. */
export function trpcBatchPath(size) {
  return `/trpc/${Array(size).fill('plants.create').join(',')}?batch=1`;
}

/** Body of a tRPC batch: `{"0": input, "1": input, …}`. */
export function trpcBatchBody(ids) {
  return `{${ids.map((id, i) => `"${i}":${trpcInput(id)}`).join(',')}}`;
}

/** Plants in the store of the read scenarios (ids 1…READ_ROWS), and the page size of `list`. */
export const READ_ROWS = 10_000;
export const LIST_LIMIT = 100;
/** Plants in the store of the filtered-page scenarios, in TAGS tags (`t0`…`t9`, by id modulo), and the tag read. */
export const BIG_ROWS = 1_000_000;
export const TAGS = 10;
export const LIST_TAG = 't3';
/** The ETag every plant of a read store has: seeded straight into the store, they are all at version 0. */
export const READ_ETAG = '"0"';

/** Whether a load reads (GET) rather than creates. */
export function isRead(load) {
  return load === 'get' || load === 'list' || load === 'get-304' || load === 'list-tag';
}

/** A PATCH body that changes the plant every time (a no-op would commit nothing). */
function patchBody() {
  return `{"name":"${PLANT_NAME} ${Math.random().toString(36).slice(2, 10)}"}`;
}

/** Creates per request of each scenario. */
export function createsPerRequest(scenario, batch) {
  return scenario === 'trpc-batch' ? batch : 1;
}

/**
 * The request of a scenario for the given ids (one per create, or the id to read): method, path,
 * body. `rest`, `postgres`, `growth`, `soak` and `webhook` are all POST /plants; `get` and `list`
 * are GET /plants/{id} and GET /plants?limit=100.
 */
export function buildRequest(scenario, ids) {
  switch (scenario) {
    case 'get':
      return { method: 'GET', path: `/plants/${ids[0]}` };
    case 'list':
      return { method: 'GET', path: `/plants?limit=${LIST_LIMIT}` };
    case 'list-tag':
      return { method: 'GET', path: `/plants?limit=${LIST_LIMIT}&tag=${LIST_TAG}` };
    case 'get-304':
      return { method: 'GET', path: `/plants/${ids[0]}`, headers: { 'if-none-match': READ_ETAG } };
    case 'patch':
      return { method: 'PATCH', path: `/plants/${ids[0]}`, body: patchBody() };
    case 'trpc':
      return { method: 'POST', path: '/trpc/plants.create', body: trpcInput(ids[0]) };
    case 'trpc-batch':
      return { method: 'POST', path: trpcBatchPath(ids.length), body: trpcBatchBody(ids) };
    default:
      return { method: 'POST', path: '/plants', body: restBody(ids[0]) };
  }
}

/** Counts the results and the errors in a tRPC batch answer (a JSON array, one entry per call). */
export function countBatchAnswer(text) {
  return { results: occurrences(text, '{"result":'), errors: occurrences(text, '{"error":') };
}

function occurrences(text, needle) {
  let count = 0;
  for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + needle.length)) count++;
  return count;
}
