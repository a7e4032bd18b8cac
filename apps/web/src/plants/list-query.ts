import type { PlantWithId } from '@plant-store/schema';
import { infiniteQueryOptions } from '@tanstack/react-query';
import type { Outputs, PlantsClient } from '../trpc.ts';

/** Plants per page: one request fills a screen or two. */
export const PAGE_SIZE = 100;

/** What the user narrows the list by: an exact tag and the start of the name ('' for either: any). */
export type PlantFilter = { tag: string; namePrefix: string };

export const NO_FILTER: PlantFilter = { tag: '', namePrefix: '' };

/**
 * A page as `plants.list` answers it (`next`: the cursor of the page after it, `null` at the end),
 * with when its request was sent (`performance.now()`): what the page shows is at least that recent.
 */
export type PlantPage = Outputs['plants']['list'] & { readAt: number };

/** Every list query, whatever its filter: what a sign-out or a lost event stream refreshes. */
export const PLANT_LIST_KEY = ['plants', 'list'] as const;

/**
 * The filter as `plants.list` takes it: the api filters every page (so `Load more` keeps the
 * filter and a page is full of matches); an empty field is no filter.
 */
function serverFilter(filter: PlantFilter): { tag?: string; name_prefix?: string } {
  return {
    ...(filter.tag !== '' && { tag: filter.tag }),
    ...(filter.namePrefix !== '' && { name_prefix: filter.namePrefix }),
  };
}

/**
 * Whether a plant belongs in the list under `filter`, as the api decides it (exact tag; the name
 * starts with the prefix, case-sensitive): for the plants the live events bring, which no page has
 * filtered.
 */
export function matchesFilter(plant: PlantWithId, filter: PlantFilter): boolean {
  return (filter.tag === '' || plant.tag === filter.tag) && plant.name.startsWith(filter.namePrefix);
}

/** The plants under `filter`, a page at a time by cursor, in id order. */
export function plantListOptions(client: PlantsClient, filter: PlantFilter) {
  const server = serverFilter(filter);
  return infiniteQueryOptions({
    queryKey: [...PLANT_LIST_KEY, server],
    queryFn: async ({ pageParam, signal }): Promise<PlantPage> => {
      const readAt = performance.now();
      const input = { limit: PAGE_SIZE, ...server, ...(pageParam !== undefined && { after: pageParam }) };
      return { ...(await client.plants.list.query(input, { signal })), readAt };
    },
    initialPageParam: undefined as bigint | undefined,
    getNextPageParam: (last) => last.next ?? undefined,
    // The live changes are kept only as long as the shown pages may lack them (`pruneChanges`): a
    // filter's pages no longer shown go at once, so going back to a filter reads it again.
    gcTime: 0,
  });
}
