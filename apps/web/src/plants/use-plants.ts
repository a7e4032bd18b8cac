import { useInfiniteQuery, useQueryClient } from '@tanstack/react-query';
import { useCallback, useEffect, useMemo, useState } from 'react';
import type { Failure } from '../failure.ts';
import type { PlantsClient } from '../trpc.ts';
import { PLANT_LIST_KEY, type PlantFilter, plantListOptions } from './list-query.ts';
import { useLiveEvents } from './live.ts';
import {
  type LiveChange,
  type LiveChanges,
  latestOf,
  mergeLive,
  pruneChanges,
  resumePosition,
  withChange,
} from './merge-live.ts';

/**
 * The plant list as the console shows it: the pages under `filter` loaded so far (the api filters
 * them), kept current by the live events (and by this console's own creates, updates and deletes,
 * which count as changes too, so they show even while the stream is down).
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
    resumeFrom: () => resumePosition(list.data?.pages ?? []),
  });

  const pages = list.data?.pages;
  // Changes every loaded page already holds are dropped.
  useEffect(() => {
    if (pages !== undefined) setChanges((known) => pruneChanges(known, pages));
  }, [pages]);
  const plants = useMemo(() => mergeLive(pages ?? [], changes, filter), [pages, changes, filter]);
  /** The plant `id` as last seen (shown or not): what an open dialog compares with what it read. */
  const latest = useCallback((id: bigint) => latestOf(plants, changes, id), [plants, changes]);
  return { list, live, filter, plants, record, latest };
}
