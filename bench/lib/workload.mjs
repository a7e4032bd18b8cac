// What the load sends: ids (unique per request) and each load's request. Shared by the load worker
// (load.mjs) and the harness, which sends one request of each run first and checks the answer.

const M63 = (1n << 63n) - 1n;

/**
 * A bijection from a counter (0, 1, 2, …) onto signed 64-bit ids spread over [-2^62, 2^62): distinct
 * counters give distinct ids, so a run's ids never collide with a pre-filled range [0, N) of counters.
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

/** The id of a counter value as text: `seq` (counter + 1, appends to the B-tree) or `scattered`. */
export const idText = (mode, counter) => String(mode === 'scattered' ? scatter(counter) : counter + 1);

export const PLANT_NAME = 'Fern';
export const PLANT_TAG = 'bench';
/** Plants in the read store (ids 1…READ_ROWS); in the tagged store, in TAGS tags `t<id mod TAGS>`. */
export const READ_ROWS = 10_000;
export const BIG_ROWS = 1_000_000;
export const TAGS = 10;
export const LIST_TAG = 't3';
export const LIST_LIMIT = 100;

export const restBody = (id) => `{"id":${id},"name":"${PLANT_NAME}","tag":"${PLANT_TAG}"}`;

/** One tRPC input as @trpc/client sends it with superjson (checked against superjson by `checkTrpcBody`). */
export const trpcInput = (id) =>
  `{"json":{"id":"${id}","name":"${PLANT_NAME}","tag":"${PLANT_TAG}"},"meta":{"values":{"id":["bigint"]},"v":1}}`;

/** Throws unless `trpcInput` is what superjson itself writes, for a few ids up to the int64 ends. */
export async function checkTrpcBody() {
  const { default: superjson } = await import('superjson');
  for (const id of ['1', '9223372036854775807', '-9223372036854775808']) {
    const expected = JSON.stringify(
      superjson.serialize({ id: BigInt(id), name: PLANT_NAME, tag: PLANT_TAG }),
    );
    if (trpcInput(id) !== expected) throw new Error(`tRPC body drifted from superjson: ${expected}`);
  }
}

/** Creates a request of `load` makes: BENCH_BATCH for a tRPC batch, else one. */
export const createsPerRequest = (load, batch) => (load === 'trpc-batch' ? batch : 1);

/** The request of a load for the given ids (one per create, or the plant to read or change). */
export function buildRequest(load, ids) {
  switch (load) {
    case 'get':
      return { method: 'GET', path: `/plants/${ids[0]}` };
    case 'get-304':
      // Every plant seeded into the read store is at version 0.
      return { method: 'GET', path: `/plants/${ids[0]}`, headers: { 'if-none-match': '"0"' } };
    case 'list':
      return { method: 'GET', path: `/plants?limit=${LIST_LIMIT}` };
    case 'list-tag':
      return { method: 'GET', path: `/plants?limit=${LIST_LIMIT}&tag=${LIST_TAG}` };
    case 'patch': {
      const name = `${PLANT_NAME} ${Math.random().toString(36).slice(2, 10)}`;
      return { method: 'PATCH', path: `/plants/${ids[0]}`, body: `{"name":"${name}"}` };
    }
    case 'trpc':
      return { method: 'POST', path: '/trpc/plants.create', body: trpcInput(ids[0]) };
    case 'trpc-batch':
      return {
        method: 'POST',
        // httpBatchLink joins one procedure path per call, and sends `{"0": input, "1": input, …}`.
        path: `/trpc/${ids.map(() => 'plants.create').join(',')}?batch=1`,
        body: `{${ids.map((id, i) => `"${i}":${trpcInput(id)}`).join(',')}}`,
      };
    default:
      return { method: 'POST', path: '/plants', body: restBody(ids[0]) };
  }
}
