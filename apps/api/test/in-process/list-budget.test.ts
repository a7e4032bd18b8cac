import { parseJson } from '@plant-store/schema';
import { describe, expect, it } from 'vitest';
import '../../src/store/postgres/store.ts';
import '../../src/store/sqlite/store.ts';
import { PREFIX_INDEX_ROWS, SCAN_ROWS } from '../../src/store/filtered-pages.ts';
import { apiOnStore } from '../support/api-on-store.ts';
import type { RunningApi } from '../support/in-process.ts';
import { postPlant, send, TOKEN } from '../support/http.ts';
import { Database } from '../../src/store/sqlite/driver.ts';
import { registered } from '../../src/store/sql.ts';
import { type SeedPlant, type TestStoreInstance, testStores, withPostgresClient } from '../support/stores.ts';

const AUTH = { authorization: `Bearer ${TOKEN}` };
type Plant = { id: bigint; name: string; tag?: string };

const range = (from: number, count: number) => Array.from({ length: count }, (_, i) => from + i);
/**
 * More `Moss` names than the name index answers for (ids 1…2100 and 40001…40010), between them two
 * scan budgets of `Fern` (10001…30000, every other one tagged `m` as the mosses are), and one `Zamia`.
 */
const SEED: SeedPlant[] = [
  ...range(1, PREFIX_INDEX_ROWS + 100).map((id) => ({ id: BigInt(id), name: `Moss ${id}`, tag: 'm' })),
  ...range(10_001, 2 * SCAN_ROWS).map((id) => ({
    id: BigInt(id),
    name: `Fern ${id}`,
    ...(id % 2 === 0 && { tag: 'm' }),
  })),
  { id: 35_000n, name: 'Zamia' },
  ...range(40_001, 10).map((id) => ({ id: BigInt(id), name: `Moss ${id}`, tag: 'm' })),
];

describe.each(testStores())('GET /plants filtered, with a scan budget, on $name', (testStore) => {
  let api: RunningApi;
  let store: TestStoreInstance;
  apiOnStore(testStore, (running) => ({ api, store } = running), { seed: SEED });

  /** Every page from `query` on, following each Link: the plants and the Link of each page. */
  async function walk(query: string, between?: (page: number) => Promise<void>) {
    const pages: { plants: Plant[]; link: string | null }[] = [];
    let next: string | undefined = `/plants?${query}`;
    while (next !== undefined) {
      const answer = await send(`${api.url}${next}`, { headers: AUTH });
      expect(answer.status).toBe(200);
      const link = answer.headers.get('link');
      pages.push({ plants: parseJson(answer.text) as Plant[], link });
      await between?.(pages.length);
      next = link === null ? undefined : /^<([^>]+)>; rel="next"$/.exec(link)![1];
    }
    return pages;
  }
  const ids = (pages: { plants: Plant[] }[]) => pages.flatMap((page) => page.plants.map((plant) => plant.id));
  const seeded = (keep: (plant: SeedPlant) => boolean) => SEED.filter(keep).map((plant) => plant.id);

  it('answers a prefix few names start with in one page, from the name index', async () => {
    const pages = await walk('name_prefix=Zam');
    expect(pages).toStrictEqual([{ plants: [{ id: 35_000n, name: 'Zamia', version: 0n }], link: null }]);
    expect(await walk('name_prefix=Zz')).toStrictEqual([{ plants: [], link: null }]);
    const both = await walk('name_prefix=Moss%204000&tag=m');
    expect(ids(both)).toStrictEqual(range(40_001, 9).map(BigInt));
  });

  it('cuts a page short where its budget ends, with a Link past the plants it read', async () => {
    const pages = await walk('name_prefix=Moss&limit=1000');
    expect(pages.map((page) => page.plants.length)).toStrictEqual([1000, 1000, 100, 0, 10]);
    // Page 3 reads 2001…2100, then Ferns to its budget's end; page 4 only Ferns.
    const through3 = 10_000 + (SCAN_ROWS - 100);
    expect(pages.map((page) => page.link)).toStrictEqual([
      '</plants?limit=1000&name_prefix=Moss&after=1000>; rel="next"',
      '</plants?limit=1000&name_prefix=Moss&after=2000>; rel="next"',
      `</plants?limit=1000&name_prefix=Moss&after=${through3}>; rel="next"`,
      `</plants?limit=1000&name_prefix=Moss&after=${through3 + SCAN_ROWS}>; rel="next"`,
      null,
    ]);
    expect(ids(pages)).toStrictEqual(seeded((plant) => plant.name.startsWith('Moss')));
  });

  it('budgets a prefix with a tag over the tag’s plants, never repeating or skipping one', async () => {
    const pages = await walk('name_prefix=Moss&tag=m&limit=500');
    expect(pages.some((page) => page.plants.length < 500 && page.link !== null)).toBe(true);
    expect(ids(pages)).toStrictEqual(seeded((plant) => plant.name.startsWith('Moss') && plant.tag === 'm'));
  });

  it('never repeats or skips a plant that was there all along while others are created between pages', async () => {
    let id = 50_000;
    const created: bigint[] = [];
    const pages = await walk('name_prefix=Moss&limit=700', async () => {
      // Behind the cursor, ahead of it, and past every page so far.
      for (const at of [-id, id - 45_000, id]) {
        created.push(BigInt(at));
        expect((await postPlant(api.url, `{"id":${at},"name":"Moss new ${at}","tag":"m"}`)).status).toBe(200);
      }
      id += 10;
    });
    const seen = ids(pages);
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toStrictEqual([...seen].sort((a, b) => (a < b ? -1 : 1)));
    const before = seeded((plant) => plant.name.startsWith('Moss'));
    expect(seen.filter((seenId) => !created.includes(seenId))).toStrictEqual(before);
  });

  it('reads a prefix’s range of the name index, and a budget’s bound in id order (the query plans)', async () => {
    const params = {
      ...{ low: 'Moss', high: 'Mosu', hits: 2001, from: 0n, budget: 10_000, tag: 'm', ids: [1n, 2n] },
      ...{ namePrefix: 'Moss', limit: 101, maxBytes: 1 << 20 },
    };
    if (testStore.name === 'sqlite') {
      const db = new Database(store.env.DATABASE_URL!.slice('file:'.length), { readonly: true });
      const plan = (name: string) => {
        const { sqlite } = registered.get(name)!;
        const args = sqlite.names.map((key) => params[key as keyof typeof params] ?? null);
        return db
          .prepare(`EXPLAIN QUERY PLAN ${sqlite.text}`)
          .all(...args)
          .map((row) => (row as { detail: string }).detail)
          .join('\n');
      };
      try {
        expect(plan('plants.hits')).toBe(
          'SEARCH plants USING COVERING INDEX plants_name (name>? AND name<?)',
        );
        expect(plan('plants.scanned.prefix')).toMatch(
          /^CO-ROUTINE scanned\nSEARCH plants USING INTEGER PRIMARY KEY \(rowid>\?\)/,
        );
        expect(plan('plants.scanned.both')).toMatch(
          /SEARCH plants USING COVERING INDEX plants_tag \(tag=\? AND id>\?\)/,
        );
      } finally {
        db.close();
      }
    } else {
      await withPostgresClient(store.env.DATABASE_URL!, async (client) => {
        // As autovacuum leaves a table: statistics, and a visibility map for index-only scans.
        await client.query('VACUUM ANALYZE plants');
        const plan = async (name: string) => {
          const { postgres } = registered.get(name)!;
          const values = postgres.names.map((key) => {
            const value = params[key as keyof typeof params];
            return Array.isArray(value)
              ? value.map(String)
              : typeof value === 'bigint'
                ? String(value)
                : value;
          });
          const { rows } = await client.query(`EXPLAIN ${postgres.text}`, values);
          return rows.map((row: Record<string, string>) => row['QUERY PLAN']).join('\n');
        };
        expect(await plan('plants.hits')).toMatch(/Index Only Scan using plants_name on plants/);
        expect(await plan('postgres.plants.page.ids')).toMatch(/Index Scan using plants_pkey on plants/);
        expect(await plan('plants.scanned.both')).toMatch(/Index Only Scan using plants_tag on plants/);
        for (const name of ['plants.hits', 'postgres.plants.page.ids', 'plants.scanned.prefix', 'plants.scanned.both'])
          expect(await plan(name)).not.toMatch(/Seq Scan/);
      });
    }
  });
});
