import type { PlantWithId } from '@plant-store/schema';
import { useMutation } from '@tanstack/react-query';
import { type ReactNode, useRef, useState } from 'react';
import { describeFailure } from '../failure.ts';
import type { PlantsClient } from '../trpc.ts';
import { UserText } from '../user-text.tsx';
import type { LiveChange } from './merge-live.ts';
import { useModal } from './modal.ts';
import { describePlant } from './plant-text.tsx';

type Props = {
  client: PlantsClient;
  /** The plant to confirm the deletion of, as read; none closes the dialog. */
  plant: PlantWithId | undefined;
  onClose(): void;
  onDeleted(change: LiveChange): void;
  /** Where focus goes once the dialog closed after a deletion (the plant's row is gone). */
  afterDeleted(): void;
  announce(message: ReactNode): void;
};

/**
 * Asks before deleting: a modal `<dialog>` whose first button, `Cancel`, has focus. The deletion
 * is of the version read: when someone else changed the plant since (412), the dialog shows it as
 * it is now and asks again, for that version. A plant someone else deleted meanwhile (404) is gone
 * all the same.
 */
export function DeleteDialog({ client, plant, onClose, onDeleted, afterDeleted, announce }: Props) {
  const cancel = useRef<HTMLButtonElement>(null);
  const [error, setError] = useState<ReactNode>();
  // The plant as it is now, when someone else changed it after it was read.
  const [changed, setChanged] = useState<PlantWithId>();
  const deleted = useRef(false);
  // Another plant to delete: no message or change of the last one shows, even for a moment.
  const [opened, setOpened] = useState<PlantWithId>();
  if (plant !== opened) {
    setOpened(plant);
    setError(undefined);
    setChanged(undefined);
  }
  const dialog = useModal(plant !== undefined, {
    onOpen: () => cancel.current?.focus(),
    onClosed: () => {
      if (deleted.current) afterDeleted();
      deleted.current = false;
    },
  });
  const remove = useMutation({
    mutationFn: (target: PlantWithId) =>
      client.plants.delete.mutate({ id: target.id, expectedVersion: target.version }),
  });
  const target = changed ?? plant;

  const confirm = () => {
    if (target === undefined || remove.isPending) return;
    const gone = () => {
      deleted.current = true;
      onDeleted({ type: 'deleted', id: target.id, position: target.version + 1n, at: performance.now() });
      onClose();
    };
    remove.mutate(target, {
      onSuccess: () => {
        announce(
          <>
            Deleted plant {String(target.id)} (<UserText>{target.name}</UserText>).
          </>,
        );
        gone();
      },
      onError: async (cause) => {
        const failure = describeFailure(cause);
        if (failure.kind === 'unauthorized') return;
        if (failure.kind === 'not-found') {
          announce(`Plant ${target.id} was already deleted.`);
          return gone();
        }
        if (failure.kind !== 'stale') return setError(notDeleted(failure.message));
        try {
          setChanged(await client.plants.get.query({ id: target.id }));
          setError(undefined);
        } catch (again) {
          const reread = describeFailure(again);
          if (reread.kind !== 'not-found') return setError(notDeleted(reread.message));
          announce(`Plant ${target.id} was already deleted.`);
          gone();
        }
      },
    });
  };

  return (
    <dialog ref={dialog} aria-labelledby="delete-title" aria-describedby="delete-what" onClose={onClose}>
      <h2 id="delete-title">Delete plant?</h2>
      {target !== undefined && (
        <p id="delete-what">
          “<UserText>{target.name}</UserText>” (id <span className="id">{String(target.id)}</span>) will be
          deleted for everyone. This cannot be undone.
        </p>
      )}
      {changed !== undefined && (
        <p role="status" className="note">
          Changed by someone else after you opened this: it is now {describePlant(changed)}.
        </p>
      )}
      {error !== undefined && (
        <p role="alert" className="error">
          {error}
        </p>
      )}
      <div className="dialog-buttons">
        <button type="button" ref={cancel} onClick={onClose}>
          Cancel
        </button>
        <button type="button" className="danger" onClick={confirm} disabled={remove.isPending}>
          Delete
        </button>
      </div>
    </dialog>
  );
}

const notDeleted = (message: string) => (
  <>
    The plant was not deleted: <UserText>{message}</UserText>
  </>
);
