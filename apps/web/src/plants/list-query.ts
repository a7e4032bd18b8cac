import type { PlantWithId } from '@plant-store/schema';
import { infiniteQueryOptions } from '@tanstack/react-query';
import type { Outputs, PlantsClient } from '../trpc.ts';

/** Plants per page: one request fills a screen or two. */
export const PAGE_SIZE = 100;

/** What the user narrows the list by. */
export type PlantFilter = { tag: string };

/**
 * A page as `plants.list` answers it (`next`: the cursor of the page after it, `null` at the end),
 * with when its request was sent (`performance.now()`): what the page shows is at least that recent.
 */
export type PlantPage = Outputs['plants']['list'] & { readAt: number };

/** Every list query, whatever its filter: what a sign-out or a lost event stream refreshes. */
export const PLANT_LIST_KEY = ['plants', 'list'] as const;

/**
 * The part of the filter the api applies: none yet, so the tag is matched on the loaded rows. When
 * `plants.list` takes `tag` and `name_prefix` (issue 24), they go here: they then join the query
 * key and the request, and `matchesFilter` keeps only what the api does not do.
 */
function serverFilter(_filter: PlantFilter): Record<string, never> {
  return {};
}

/** Whether a loaded plant is shown under `filter` (an exact tag, as the api's `tag` filter will match). */
export function matchesFilter(plant: PlantWithId, filter: PlantFilter): boolean {
  return filter.tag === '' || plant.tag === filter.tag;
}

/** The plants, a page at a time by cursor, in id order. */
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
  });
}
