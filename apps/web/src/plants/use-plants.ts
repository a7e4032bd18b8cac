import { useInfiniteQuery, useQueryClient } from '@tanstack/react-query';
import { useCallback, useEffect, useMemo, useState } from 'react';
import type { Failure } from '../failure.ts';
import type { PlantsClient } from '../trpc.ts';
import { matchesFilter, PLANT_LIST_KEY, type PlantFilter, plantListOptions } from './list-query.ts';
import { useLiveEvents } from './live.ts';
import { type LiveChange, type LiveChanges, mergeLive, pruneChanges, withChange } from './merge-live.ts';

/**
 * The plant list as the console shows it: the pages loaded so far, kept current by the live
 * events (and by this console's own creates and deletes, which count as changes too, so they show
 * even while the stream is down), filtered by `filter`.
 */
export function usePlants(
  client: PlantsClient,
  filter: PlantFilter,
  onUnauthorized: (failure: Failure) => void,
) {
  const queryClient = useQueryClient();
  const list = useInfiniteQuery(plantListOptions(client, filter));
  const [changes, setChanges] = useState<LiveChanges>(() => new Map());
  const record = useCallback((change: LiveChange) => setChanges((known) => withChange(known, change)), []);
  const live = useLiveEvents(client, {
    onChange: record,
    onFresh: () => void queryClient.invalidateQueries({ queryKey: PLANT_LIST_KEY }),
    onUnauthorized,
  });

  const pages = list.data?.pages;
  // Changes every loaded page already holds are dropped.
  useEffect(() => {
    if (pages !== undefined) setChanges((known) => pruneChanges(known, pages));
  }, [pages]);
  const plants = useMemo(() => mergeLive(pages ?? [], changes), [pages, changes]);
  const shown = useMemo(() => plants.filter((plant) => matchesFilter(plant, filter)), [plants, filter]);
  return { list, live, loaded: plants.length, plants: shown, record };
}
