/**
 * An internal app of the Plant Store: it stocks a greenhouse's plants over tRPC, then counts what
 * the store holds. Run it against a running api:
 *   PLANTS_URL=http://127.0.0.1:3000 PLANTS_TOKEN=$(cat apps/api/data/api-token) \
 *     pnpm --filter @plant-store/example-trpc-app start
 */
import { createTrpcClient, type NewPlant, PlantStoreError } from '@plant-store/client';

const GREENHOUSE: NewPlant[] = [
  { id: 1001n, name: 'Monstera', tag: 'aroid' },
  { id: 1002n, name: 'Boston fern', tag: 'fern' },
  // Ids are int64, exact end to end: this one is 2^53 + 1.
  { id: 9007199254740993n, name: 'Bird of paradise' },
];

const token = process.env.PLANTS_TOKEN;
if (!token) {
  process.stderr.write('Set PLANTS_TOKEN to a bearer token of the api (and PLANTS_URL if not local).\n');
  process.exit(2);
}
const plants = createTrpcClient({ baseUrl: process.env.PLANTS_URL ?? 'http://127.0.0.1:3000', token }).plants;

// Each create goes out in a request of its own with an Idempotency-Key, retried by the client if
// the connection drops (a retry of one that committed resolves as created); each settles on its own.
const created = await Promise.allSettled(GREENHOUSE.map((plant) => plants.create.mutate(plant)));
created.forEach((result, i) => {
  const { id, name } = GREENHOUSE[i]!;
  if (result.status === 'fulfilled') console.log(`created ${id} ${name}`);
  else if (result.reason instanceof PlantStoreError && result.reason.status === 409)
    console.log(`already there: ${id} ${name}`);
  else throw result.reason;
});

// Inputs and outputs are typed by the server's router: `after` and `next` are bigint.
let count = 0;
let after: bigint | undefined;
do {
  const page = await plants.list.query({ limit: 100, after });
  count += page.plants.length;
  after = page.next ?? undefined;
} while (after !== undefined);
const bird = await plants.get.query({ id: 9007199254740993n });
console.log(`the store holds ${count} plants; ${bird.id} is ${bird.name}`);
