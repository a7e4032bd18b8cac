import type { PlantWithId } from '@plant-store/schema';
import { type ReactNode, useCallback, useEffect, useRef, useState } from 'react';
import { describeFailure, type Failure } from './failure.ts';
import { AddPlantForm } from './plants/add-plant-form.tsx';
import { DeleteDialog } from './plants/delete-dialog.tsx';
import { EditDialog } from './plants/edit-dialog.tsx';
import { NO_FILTER, type PlantFilter } from './plants/list-query.ts';
import type { LiveState } from './plants/live.ts';
import { PlantList } from './plants/plant-list.tsx';
import { usePlants } from './plants/use-plants.ts';
import type { PlantsClient } from './trpc.ts';
import { UserText } from './user-text.tsx';

/** How long typing in a filter must pause before the list is read again with it. */
const FILTER_PAUSE_MS = 250;

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

/** The signed-in console: the add form, the live list of plants, and the edit and delete dialogs. */
export function Console({ client, onSignOut }: Props) {
  const [filter, setFilter] = useState<PlantFilter>(NO_FILTER);
  const [editing, setEditing] = useState<PlantWithId>();
  const [deleting, setDeleting] = useState<PlantWithId>();
  const [announcement, setAnnouncement] = useState<ReactNode>('');
  const heading = useRef<HTMLHeadingElement>(null);
  const refused = useCallback((failure: Failure) => onSignOut(`Signed out: ${failure.message}`), [onSignOut]);
  const plants = usePlants(client, useSettled(filter, FILTER_PAUSE_MS), refused);
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
          onEdit={setEditing}
          onDelete={setDeleting}
          headingRef={heading}
        />
      </main>
      <EditDialog
        client={client}
        plant={editing}
        latest={editing === undefined ? undefined : plants.latest(editing.id)}
        onClose={() => setEditing(undefined)}
        onSaved={plants.record}
        announce={setAnnouncement}
      />
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

/** `value` once it stayed the same for `ms`. */
function useSettled<T>(value: T, ms: number): T {
  const [settled, setSettled] = useState(value);
  useEffect(() => {
    const timer = setTimeout(() => setSettled(value), ms);
    return () => clearTimeout(timer);
  }, [value, ms]);
  return settled;
}

/**
 * What keeps the console from being current, in words: the api unreachable, limiting, or
 * restarting (while the calls and the stream retry), or a stream that stopped for good.
 */
function connectionProblem({ live, list }: ReturnType<typeof usePlants>): ReactNode {
  const failure =
    live.state !== 'live' && live.failure !== undefined
      ? live.failure
      : list.isFetching && list.failureReason !== null
        ? describeFailure(list.failureReason)
        : undefined;
  if (failure === undefined) return undefined;
  if (!failure.transient) {
    return (
      <>
        Live updates are off: <UserText>{failure.message}</UserText>
      </>
    );
  }
  if (failure.kind === 'unreachable') return 'Cannot reach the Plant Store api. Retrying…';
  if (failure.kind === 'rate-limited' && failure.retryAfterSeconds !== undefined) {
    return `Too many requests: retrying in ${failure.retryAfterSeconds} s.`;
  }
  return (
    <>
      <UserText>{failure.message}</UserText> Retrying…
    </>
  );
}
