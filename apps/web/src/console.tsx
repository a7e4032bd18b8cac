import type { PlantWithId } from '@plant-store/schema';
import { useCallback, useRef, useState } from 'react';
import { describeFailure, type Failure } from './failure.ts';
import { AddPlantForm } from './plants/add-plant-form.tsx';
import { DeleteDialog } from './plants/delete-dialog.tsx';
import type { PlantFilter } from './plants/list-query.ts';
import type { LiveState } from './plants/live.ts';
import { PlantList } from './plants/plant-list.tsx';
import { usePlants } from './plants/use-plants.ts';
import type { PlantsClient } from './trpc.ts';

const LIVE_TEXT: Record<LiveState['state'], string> = {
  live: 'Live updates on',
  connecting: 'Connecting live updates…',
  stopped: 'Live updates off',
};

type Props = {
  client: PlantsClient;
  /** Forgets the token; `message` tells the sign-in screen why, when the api refused it. */
  onSignOut(message?: string): void;
};

/** The signed-in console: the add form and the live list of plants. */
export function Console({ client, onSignOut }: Props) {
  const [filter, setFilter] = useState<PlantFilter>({ tag: '' });
  const [deleting, setDeleting] = useState<PlantWithId>();
  const [announcement, setAnnouncement] = useState('');
  const heading = useRef<HTMLHeadingElement>(null);
  const refused = useCallback((failure: Failure) => onSignOut(`Signed out: ${failure.message}`), [onSignOut]);
  const plants = usePlants(client, filter, refused);
  const problem = connectionProblem(plants);
  const focusList = useCallback(() => heading.current?.focus(), []);

  return (
    <div className="console">
      <header className="top">
        <h1>Plant Store</h1>
        <p role="status" className={`live-state ${plants.live.state}`}>
          {LIVE_TEXT[plants.live.state]}
        </p>
        <button type="button" onClick={() => onSignOut()}>
          Sign out
        </button>
      </header>
      <div role="alert" className={problem === undefined ? 'banner-slot' : 'banner'}>
        {problem}
      </div>
      <main>
        <AddPlantForm client={client} onAdded={plants.record} announce={setAnnouncement} />
        <p role="status" className="announcement">
          {announcement}
        </p>
        <PlantList
          plants={plants}
          filter={filter}
          onFilter={setFilter}
          onDelete={setDeleting}
          headingRef={heading}
        />
      </main>
      <DeleteDialog
        client={client}
        plant={deleting}
        onClose={() => setDeleting(undefined)}
        onDeleted={plants.record}
        afterDeleted={focusList}
        announce={setAnnouncement}
      />
    </div>
  );
}

/**
 * What keeps the console from being current, in words: the api unreachable, limiting, or
 * restarting (while the calls and the stream retry), or a stream that stopped for good.
 */
function connectionProblem({ live, list }: ReturnType<typeof usePlants>): string | undefined {
  const failure =
    live.state !== 'live' && live.failure !== undefined
      ? live.failure
      : list.isFetching && list.failureReason !== null
        ? describeFailure(list.failureReason)
        : undefined;
  if (failure === undefined) return undefined;
  if (!failure.transient) return `Live updates are off: ${failure.message}`;
  if (failure.kind === 'unreachable') return 'Cannot reach the Plant Store api. Retrying…';
  if (failure.kind === 'rate-limited' && failure.retryAfterSeconds !== undefined) {
    return `Too many requests: retrying in ${failure.retryAfterSeconds} s.`;
  }
  return `${failure.message} Retrying…`;
}
