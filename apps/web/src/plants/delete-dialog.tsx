import type { PlantWithId } from '@plant-store/schema';
import { useMutation } from '@tanstack/react-query';
import { useEffect, useRef, useState } from 'react';
import { describeFailure } from '../failure.ts';
import type { PlantsClient } from '../trpc.ts';
import type { LiveChange } from './merge-live.ts';

type Props = {
  client: PlantsClient;
  /** The plant to confirm the deletion of; none closes the dialog. */
  plant: PlantWithId | undefined;
  onClose(): void;
  onDeleted(change: LiveChange): void;
  /** Where focus goes once the dialog closed after a deletion (the plant's row is gone). */
  afterDeleted(): void;
  announce(message: string): void;
};

/**
 * Asks before deleting: a modal `<dialog>` (the browser keeps focus inside it and closes it on
 * Escape) whose first button, `Cancel`, has focus. A plant someone else deleted meanwhile (404) is
 * gone all the same.
 */
export function DeleteDialog({ client, plant, onClose, onDeleted, afterDeleted, announce }: Props) {
  const dialog = useRef<HTMLDialogElement>(null);
  const cancel = useRef<HTMLButtonElement>(null);
  const [error, setError] = useState<string>();
  const deleted = useRef(false);
  const remove = useMutation({ mutationFn: (id: bigint) => client.plants.delete.mutate({ id }) });

  useEffect(() => {
    const element = dialog.current;
    if (element === null) return;
    if (plant !== undefined && !element.open) {
      setError(undefined);
      element.showModal();
      cancel.current?.focus();
    } else if (plant === undefined && element.open) {
      element.close();
      if (deleted.current) afterDeleted();
      deleted.current = false;
    }
  }, [plant, afterDeleted]);

  const confirm = () => {
    if (plant === undefined || remove.isPending) return;
    const gone = () => {
      deleted.current = true;
      onDeleted({ type: 'deleted', id: plant.id, at: performance.now() });
      onClose();
    };
    remove.mutate(plant.id, {
      onSuccess: () => {
        announce(`Deleted plant ${plant.id} (${plant.name}).`);
        gone();
      },
      onError: (cause) => {
        const failure = describeFailure(cause);
        if (failure.kind === 'unauthorized') return;
        if (failure.kind === 'not-found') {
          announce(`Plant ${plant.id} was already deleted.`);
          gone();
        } else setError(`The plant was not deleted: ${failure.message}`);
      },
    });
  };

  return (
    <dialog ref={dialog} aria-labelledby="delete-title" aria-describedby="delete-what" onClose={onClose}>
      <h2 id="delete-title">Delete plant?</h2>
      {plant !== undefined && (
        <p id="delete-what">
          “{plant.name}” (id <span className="id">{String(plant.id)}</span>) will be deleted for everyone.
          This cannot be undone.
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
