import { parseJson } from '@plant-store/schema';
import { Database } from '../../src/store/sqlite/driver.ts';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import '../../src/store/postgres/store.ts';
import '../../src/store/sqlite/store.ts';
import { registered } from '../../src/store/sql.ts';
import { apiOnStore } from '../support/api-on-store.ts';
import type { RunningApi } from '../support/in-process.ts';
import { errorBody, postPlant, send, TOKEN } from '../support/http.ts';
import { type TestStoreInstance, testStores, withPostgresClient } from '../support/stores.ts';

const AUTH = { authorization: `Bearer ${TOKEN}` };
type Plant = { id: bigint; name: string; tag?: string; version: bigint };

/** The plants the store holds, seeded below: ids 1…60, tags a/b/c in turn, names of both cases. */
const SEED = Array.from({ length: 60 }, (_, i) => ({
  id: BigInt(i + 1),
  name: `${['Fern', 'fern', 'Ficus', 'Fé'][i % 4]} ${i + 1}`,
  ...(i % 5 !== 4 && { tag: ['a', 'b', 'c'][i % 3] }),
}));

describe.each(testStores())('GET /plants with tag and name_prefix on $name', (testStore) => {
  let store: TestStoreInstance;
  let api: RunningApi;

  apiOnStore(testStore, (running) => ({ api, store } = running), { seed: SEED });

  const list = (query: string) => send(`${api.url}/plants?${query}`, { headers: AUTH });

  /** Every page from `query` on, following each Link. */
  async function walk(query: string): Promise<{ plants: Plant[]; links: string[] }> {
    const plants: Plant[] = [];
    const links: string[] = [];
    let next: string | undefined = `/plants?${query}`;
    while (next !== undefined) {
      const answer = await send(`${api.url}${next}`, { headers: AUTH });
      expect(answer.status).toBe(200);
      plants.push(...(parseJson(answer.text) as Plant[]));
      const link = answer.headers.get('link');
      if (link !== null) links.push(link);
      next = link === null ? undefined : /^<([^>]+)>; rel="next"$/.exec(link)![1];
    }
    return { plants, links };
  }

  const expected = (keep: (plant: (typeof SEED)[number]) => boolean) =>
    SEED.filter(keep).map((plant) => plant.id);

  it('answers only the plants with exactly this tag, in id order, a page at a time, the Link keeping the tag', async () => {
    const { plants, links } = await walk('tag=b&limit=7');
    expect(plants.map((plant) => plant.id)).toEqual(expected((plant) => plant.tag === 'b'));
    expect(plants.every((plant) => plant.tag === 'b' && plant.version === 0n)).toBe(true);
    expect(links[0]).toBe(`</plants?limit=7&tag=b&after=${plants[6]!.id}>; rel="next"`);
  });

  it('matches name_prefix case-sensitively, code point by code point, and combines it with tag', async () => {
    const fern = await walk('name_prefix=Fe&limit=4');
    expect(fern.plants.map((plant) => plant.id)).toEqual(expected((plant) => plant.name.startsWith('Fe')));
    expect(fern.links[0]).toBe(`</plants?limit=4&name_prefix=Fe&after=${fern.plants[3]!.id}>; rel="next"`);
    const accented = await walk(`name_prefix=${encodeURIComponent('Fé')}&tag=a&limit=2`);
    expect(accented.plants.map((plant) => plant.id)).toEqual(
      expected((plant) => plant.name.startsWith('Fé') && plant.tag === 'a'),
    );
    expect(accented.links[0]).toBe(
      `</plants?limit=2&tag=a&name_prefix=F%C3%A9&after=${accented.plants[1]!.id}>; rel="next"`,
    );
    // `%` and `_` are text, not patterns.
    expect((await list('name_prefix=%25')).text).toBe('[]');
    expect((await list('name_prefix=F_rn')).text).toBe('[]');
  });

  it('answers an empty page, without Link, when nothing matches', async () => {
    const answer = await list('tag=zzz');
    expect(answer.status).toBe(200);
    expect(answer.text).toBe('[]');
    expect(answer.headers.get('link')).toBeNull();
  });

  it('answers 400 for a tag or prefix longer than the limits', async () => {
    const tag = await list(`tag=${'x'.repeat(101)}`);
    expect(tag.status).toBe(400);
    expect(tag.text).toBe(errorBody(400, 'Invalid request parameters: tag must be at most 100 characters.'));
    const prefix = await list(`name_prefix=${'x'.repeat(201)}`);
    expect(prefix.text).toBe(
      errorBody(400, 'Invalid request parameters: name_prefix must be at most 200 characters.'),
    );
  });

  it('never repeats or skips a plant that was there all along while others are created (property)', async () => {
    let nextId = 1_000;
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('a', 'b', 'c'),
        fc.integer({ min: 1, max: 6 }),
        fc.array(fc.record({ tag: fc.constantFrom('a', 'b', 'c'), low: fc.boolean() }), { maxLength: 6 }),
        async (tag, limit, creations) => {
          const before = (await walk(`tag=${tag}&limit=1000`)).plants.map((plant) => plant.id);
          const seen: bigint[] = [];
          let next: string | undefined = `/plants?tag=${tag}&limit=${limit}`;
          let i = 0;
          while (next !== undefined) {
            const answer = await send(`${api.url}${next}`, { headers: AUTH });
            const page = parseJson(answer.text) as Plant[];
            expect(page.every((plant) => plant.tag === tag)).toBe(true);
            seen.push(...page.map((plant) => plant.id));
            // Between pages, others create plants: some below the cursor, some above.
            const creation = creations[i++];
            if (creation !== undefined) {
              const id = creation.low ? -BigInt(nextId++) : BigInt(nextId++);
              expect(
                (await postPlant(api.url, `{"id":${id},"name":"New","tag":"${creation.tag}"}`)).status,
              ).toBe(200);
            }
            const link = answer.headers.get('link');
            next = link === null ? undefined : /^<([^>]+)>; rel="next"$/.exec(link)![1];
          }
          expect(new Set(seen).size).toBe(seen.length);
          expect([...seen].sort((a, b) => (a < b ? -1 : 1))).toEqual(seen);
          for (const id of before) expect(seen).toContain(id);
        },
      ),
      { numRuns: 25 },
    );
  });

  it('reads a tag page through the (tag, id) index (the query plan of the statement the store runs)', async () => {
    // SQLite reads a filtered page row by row, PostgreSQL bounds it in the server: each its own statement.
    const statement = registered.get(
      testStore.name === 'sqlite' ? 'sqlite.plants.page.tag' : 'plants.page.tag',
    );
    expect(statement).toBeDefined();
    if (testStore.name === 'sqlite') {
      const db = new Database(store.env.DATABASE_URL!.slice('file:'.length), { readonly: true });
      try {
        // The page, and the sum of its text bytes that lets one all() read it.
        for (const { sqlite } of [statement!, registered.get('sqlite.plants.bytes.tag')!]) {
          const plan = db
            .prepare(`EXPLAIN QUERY PLAN ${sqlite.text}`)
            .all(...sqlite.names.map((name) => ({ tag: 'a', from: 0n, limit: 101, maxBytes: 1 << 20 })[name]))
            .map((row) => (row as { detail: string }).detail);
          expect(plan.join('\n')).toMatch(
            /SEARCH plants USING (COVERING )?INDEX plants_tag \(tag=\? AND id>\?/,
          );
          expect(plan.join('\n')).not.toMatch(/SCAN plants/);
        }
      } finally {
        db.close();
      }
    } else {
      await withPostgresClient(store.env.DATABASE_URL!, async (client) => {
        // A table the planner would rather scan than index, had it no index for the tag: 20,000
        // plants in 10 tags, with fresh statistics.
        await client.query(`INSERT INTO plants (id, name, tag)
          SELECT n, 'plant ' || n, 'tag' || (n % 10) FROM generate_series(100000, 119999) AS n`);
        await client.query('ANALYZE plants');
        const params = statement!.postgres.names.map(
          (name) => ({ tag: 'tag3', from: 0, limit: 101, maxBytes: 1 << 20 })[name],
        );
        let text = statement!.postgres.text;
        params.forEach((value, i) => {
          text = text.replaceAll(`$${i + 1}`, typeof value === 'string' ? `'${value}'` : String(value));
        });
        const { rows } = await client.query(`EXPLAIN ${text}`);
        const plan = rows.map((row: Record<string, string>) => row['QUERY PLAN']).join('\n');
        expect(plan).toMatch(/Index (Only )?Scan using plants_tag on plants/);
        expect(plan).not.toMatch(/Seq Scan on plants/);
        await client.query('DELETE FROM plants WHERE id >= 100000');
      });
    }
  });
});
