import { describe, expect, it } from 'vitest';
import { migratePostgres } from '../../src/store/postgres/store.ts';
import { migrations } from '../../src/store/migrations.ts';
import { type ApiProcess, runApiCommand, startApiProcess } from '../support/api-process.ts';
import { errorBody, postPlant } from '../support/http.ts';
import {
  postgresAvailable,
  postgresTestStore,
  type TestStoreInstance,
  withPostgresClient,
} from '../support/stores.ts';

const INSTANCES = 3;
const MIGRATIONS = migrations.map(({ version, name }) => ({ version, name }));
const VERSIONS = MIGRATIONS.map(({ version }) => version);

/** Runs `fn` over `items` with at most `limit` running at once. */
async function inParallel<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await fn(items[index]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

const migrationRows = (url: string) =>
  withPostgresClient(url, async (client) => {
    const { rows } = await client.query('SELECT version, name FROM schema_migrations ORDER BY version');
    return rows;
  });

describe.skipIf(!postgresAvailable())('several instances on one PostgreSQL database', () => {
  it('applies each migration once when 3 migrations start together on a fresh database', async () => {
    const store = await postgresTestStore.setup();
    try {
      const url = store.env.DATABASE_URL!;
      const applied = await Promise.all(
        Array.from({ length: INSTANCES }, () => migratePostgres({ url, timeoutMs: 5_000 })),
      );
      // One run applied every version; the others waited on the advisory lock and found nothing to do.
      expect(applied.flatMap((run) => run.applied)).toStrictEqual(VERSIONS);
      expect(await migrationRows(url)).toStrictEqual(MIGRATIONS);
      expect(await store.ids()).toStrictEqual([]);
    } finally {
      await store.teardown();
    }
  });

  it('the migrate command, run by 3 processes at once, applies each migration once and exits 0', async () => {
    const store = await postgresTestStore.setup();
    try {
      const runs = await Promise.all(
        Array.from({ length: INSTANCES }, () => runApiCommand(['migrate'], store.env)),
      );
      const applied = runs.flatMap(({ stdout }) => {
        const line = JSON.parse(stdout.trim().split('\n').at(-1)!) as {
          migrated: boolean;
          applied: number[];
        };
        expect(line.migrated).toBe(true);
        return line.applied;
      });
      expect(applied).toStrictEqual(VERSIONS);
      expect(await migrationRows(store.env.DATABASE_URL!)).toStrictEqual(MIGRATIONS);
    } finally {
      await store.teardown();
    }
  });

  it('answers exactly one 200 per id and 409 for the rest across 3 api processes; rows are the acknowledged ids', async () => {
    const store: TestStoreInstance = await postgresTestStore.setup();
    const apis: ApiProcess[] = [];
    try {
      // Started together on a fresh database: their start-up migrations race too.
      apis.push(
        ...(await Promise.all(Array.from({ length: INSTANCES }, () => startApiProcess({ env: store.env })))),
      );
      const ids = [
        -(2n ** 63n),
        2n ** 63n - 1n,
        2n ** 53n - 1n,
        2n ** 53n,
        2n ** 53n + 1n,
        -(2n ** 53n + 1n),
        0n,
        ...Array.from({ length: 33 }, (_, i) => BigInt(i + 1) * 1_000_003n),
      ];
      // Every id is sent once through every instance, in shuffled order, 24 requests at a time.
      const attempts = ids
        .flatMap((id) => apis.map((_, via) => ({ id, via, key: Math.random() })))
        .sort((a, b) => a.key - b.key);
      const answers = await inParallel(attempts, 24, async ({ id, via }) => ({
        id,
        via,
        answer: await postPlant(apis[via]!.url, `{"id":${id},"name":"via-${via}"}`),
      }));

      const winners = new Map<bigint, number>();
      for (const { id, via, answer } of answers) {
        if (answer.status === 200) {
          expect(winners.has(id), `a second 200 for id ${id}`).toBe(false);
          winners.set(id, via);
          expect(answer.text).toBe(`{"name":"via-${via}"}`);
        } else {
          expect({ id, status: answer.status, text: answer.text }).toStrictEqual({
            id,
            status: 409,
            text: errorBody(409, `A plant with id ${id} already exists.`),
          });
        }
      }
      expect([...winners.keys()].sort((a, b) => (a < b ? -1 : 1))).toStrictEqual(
        [...ids].sort((a, b) => (a < b ? -1 : 1)),
      );
      // Each instance took part in deciding (not all from one).
      expect(new Set(answers.filter(({ answer }) => answer.status === 409).map(({ via }) => via)).size).toBe(
        INSTANCES,
      );

      for (const api of apis) expect(await api.stop()).toBe(0);
      const rows = await withPostgresClient(store.env.DATABASE_URL!, async (client) => {
        const result = await client.query<{ id: string; name: string }>(
          'SELECT id::text AS id, name FROM plants ORDER BY id',
        );
        return result.rows.map((row) => [BigInt(row.id), row.name] as const);
      });
      // The rows are exactly the acknowledged ids, each with the name of the create that won.
      expect(new Map(rows)).toStrictEqual(new Map([...winners].map(([id, via]) => [id, `via-${via}`])));
      expect(await migrationRows(store.env.DATABASE_URL!)).toStrictEqual(MIGRATIONS);
    } finally {
      await Promise.all(apis.map((api) => api.stop()));
      for (const api of apis) api.cleanup();
      await store.teardown();
    }
  });
});
