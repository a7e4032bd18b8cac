import { parseJson } from '@plant-store/schema';
import { createTRPCClient, httpLink } from '@trpc/client';
import superjson from 'superjson';
import { describe, expect, it } from 'vitest';
import type { AppRouter } from '../../src/trpc/router.ts';
import { PAGE_BUDGET_BYTES } from '../../src/store/contract.ts';
import { apiOnStore } from '../support/api-on-store.ts';
import type { RunningApi } from '../support/in-process.ts';
import { send, TOKEN } from '../support/http.ts';
import { type SeedPlant, testStores } from '../support/stores.ts';

const AUTH = { authorization: `Bearer ${TOKEN}` };

/** Every third plant has a 60,000-character name, as rows written before the length limits could, and the longest tag. */
const PLANTS: SeedPlant[] = Array.from({ length: 90 }, (_, i) => {
  const id = 2n ** 53n + BigInt(i);
  return i % 3 === 0
    ? { id, name: `${i} `.padEnd(60_000, 'x'), tag: 'ü'.repeat(100) }
    : { id, name: `Fern ${i}` };
});

/** The plants as the api answers them: seeded straight into the store, so at version 0. */
const STORED = PLANTS.map((plant) => ({ ...plant, version: 0n }));

const bytes = (plant: SeedPlant) => Buffer.byteLength(plant.name) + Buffer.byteLength(plant.tag ?? '');

/** The pages the contract promises: rows in id order, a new page at `limit` or past the budget. */
function expectedPages(limit: number, plants = STORED): SeedPlant[][] {
  const pages: SeedPlant[][] = [];
  let page: SeedPlant[] = [];
  let used = 0;
  for (const plant of plants) {
    if (page.length === limit || (page.length > 0 && used + bytes(plant) > PAGE_BUDGET_BYTES)) {
      pages.push(page);
      page = [];
      used = 0;
    }
    page.push(plant);
    used += bytes(plant);
  }
  pages.push(page);
  return pages;
}

describe.each(testStores())('a page of plants within its byte budget on $name', (testStore) => {
  let api: RunningApi;

  apiOnStore(testStore, (running) => ({ api } = running), { seed: PLANTS });

  it('ends GET /plants early at 1 MiB of text, and its Links give every plant exactly once', async () => {
    const pages = expectedPages(1000);
    // 30 big rows of 61 KB are 1.8 MB: two pages, the first with 17 big rows (51 plants in all),
    // far below limit=1000.
    expect(pages.map((page) => page.length)).toEqual([51, 39]);
    let next: string | null = '/plants?limit=1000';
    const seen: bigint[] = [];
    for (const [i, page] of pages.entries()) {
      const answer = await send(`${api.url}${next}`, { headers: AUTH });
      expect(answer.status).toBe(200);
      const plants = parseJson(answer.text) as SeedPlant[];
      expect(plants).toEqual(page);
      expect(plants.reduce((sum, plant) => sum + bytes(plant), 0)).toBeLessThanOrEqual(PAGE_BUDGET_BYTES);
      seen.push(...plants.map((plant) => plant.id));
      const link = answer.headers.get('link');
      // The next page asks for the same limit, after the last plant of this one.
      expect(link).toBe(
        i === pages.length - 1 ? null : `</plants?limit=1000&after=${page.at(-1)!.id}>; rel="next"`,
      );
      next = /^<([^>]+)>/.exec(link ?? '')?.[1] ?? null;
    }
    expect(next).toBeNull();
    expect(seen).toEqual(PLANTS.map((plant) => plant.id));
  });

  it('ends a tag page early at 1 MiB too, and reads a tag page that fits whole', async () => {
    const tag = 'ü'.repeat(100);
    const tagged = STORED.filter((plant) => plant.tag === tag);
    for (const limit of [1000, 10]) {
      const pages = expectedPages(limit, tagged);
      expect(pages.map((page) => page.length)).toEqual(limit === 1000 ? [17, 13] : [10, 10, 10]);
      let next: string | null = `/plants?limit=${limit}&tag=${encodeURIComponent(tag)}`;
      for (const page of pages) {
        const answer = await send(`${api.url}${next}`, { headers: AUTH });
        expect(answer.status).toBe(200);
        expect(parseJson(answer.text)).toEqual(page);
        next = /^<([^>]+)>/.exec(answer.headers.get('link') ?? '')?.[1] ?? null;
      }
      expect(next).toBeNull();
    }
  });

  it('cuts a page at limit when that comes first', async () => {
    const answer = await send(`${api.url}/plants?limit=2`, { headers: AUTH });
    expect(parseJson(answer.text)).toEqual(STORED.slice(0, 2));
    expect(answer.headers.get('link')).toBe(`</plants?limit=2&after=${PLANTS[1]!.id}>; rel="next"`);
  });

  it('ends plants.list early too, with next as the cursor', async () => {
    const trpc = createTRPCClient<AppRouter>({
      links: [httpLink({ url: `${api.url}/trpc`, transformer: superjson, headers: AUTH })],
    });
    const seen: bigint[] = [];
    let after: bigint | undefined;
    for (const page of expectedPages(1000)) {
      const answer = await trpc.plants.list.query({ limit: 1000, after });
      expect(answer.plants).toEqual(page);
      seen.push(...answer.plants.map((plant) => plant.id));
      after = answer.next ?? undefined;
    }
    expect(after).toBeUndefined();
    expect(seen).toEqual(PLANTS.map((plant) => plant.id));
  });
});
