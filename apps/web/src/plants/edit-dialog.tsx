import { PLANT_FIELD_NAMES, PLANT_FIELDS, type PlantWithId } from '@plant-store/schema';
import { useMutation } from '@tanstack/react-query';
import { type FormEvent, type ReactNode, useEffect, useRef, useState } from 'react';
import { describeFailure } from '../failure.ts';
import type { PlantsClient } from '../trpc.ts';
import { UserText } from '../user-text.tsx';
import type { LiveChange } from './merge-live.ts';
import { useModal } from './modal.ts';
import { type EditFields, editFields, type PlantChange, parsePlantEdit } from './plant-edit.ts';
import { describeChange, describePlant } from './plant-text.tsx';
import { useTextFields } from './text-field.tsx';

type Props = {
  client: PlantsClient;
  /** The plant to edit, as read (its version is the one the change is for); none closes the dialog. */
  plant: PlantWithId | undefined;
  /** The plant as last seen live: shown when someone else changes it while the form is open. */
  latest: PlantWithId | 'deleted' | undefined;
  onClose(): void;
  onSaved(change: LiveChange): void;
  announce(message: ReactNode): void;
};

/** Someone else's change that stopped a save: the change to apply again, and the plant as it is now. */
type Conflict = { change: PlantChange; current: PlantWithId };

/**
 * `Name`, `Tag` (empty: no tag) and `Save`, in a modal `<dialog>`. Only the fields edited are
 * sent, for the version read (`expectedVersion`). When someone else changed the plant since (412),
 * nothing was saved: the dialog shows the plant as it is now, and `Apply again` sends the same
 * change for that version. A change by someone else while the form is open is shown as it comes.
 */
export function EditDialog({ client, plant, latest, onClose, onSaved, announce }: Props) {
  const { fields, reset, refuse, focus, field } = useTextFields<keyof EditFields>(
    'edit-plant',
    editFields(undefined),
  );
  const [formError, setFormError] = useState<ReactNode>();
  const [conflict, setConflict] = useState<Conflict>();
  const applyAgain = useRef<HTMLButtonElement>(null);
  // Another plant to edit: the form starts from it, set while rendering so that it never shows the
  // last plant's values or messages.
  const [opened, setOpened] = useState<PlantWithId>();
  if (plant !== opened) {
    setOpened(plant);
    if (plant !== undefined) reset(editFields(plant));
    setFormError(undefined);
    setConflict(undefined);
  }
  const dialog = useModal(plant !== undefined, { onOpen: () => focus('name') });
  const save = useMutation({
    mutationFn: ({ change, version }: { change: PlantChange; version: bigint }) =>
      client.plants.update.mutate({ id: plant!.id, ...change, expectedVersion: version }),
  });
  useEffect(() => {
    if (conflict !== undefined) applyAgain.current?.focus();
  }, [conflict]);

  const send = (change: PlantChange, version: bigint) => {
    if (plant === undefined || save.isPending) return;
    setFormError(undefined);
    save.mutate(
      { change, version },
      {
        onSuccess: (saved) => {
          onSaved({ type: 'saved', plant: saved, at: performance.now() });
          announce(
            <>
              Saved plant {String(saved.id)} (<UserText>{saved.name}</UserText>).
            </>,
          );
          onClose();
        },
        onError: async (cause) => {
          const failure = describeFailure(cause);
          if (failure.kind === 'unauthorized') return;
          if (failure.kind === 'not-found') return setFormError(DELETED);
          if (failure.kind !== 'stale') return setFormError(notSaved(failure.message));
          try {
            setConflict({ change, current: await client.plants.get.query({ id: plant.id }) });
          } catch (again) {
            const reread = describeFailure(again);
            setFormError(reread.kind === 'not-found' ? DELETED : notSaved(reread.message));
          }
        },
      },
    );
  };

  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (plant === undefined) return;
    const parsed = parsePlantEdit(plant, fields);
    refuse(parsed.ok ? {} : parsed.errors);
    if (!parsed.ok) return;
    if (Object.keys(parsed.change).length > 0) return send(parsed.change, plant.version);
    announce(`Plant ${plant.id} is unchanged.`);
    onClose();
  };

  // Someone else's change since the version this dialog works from, unless it is this save's own.
  const read = conflict?.current ?? plant;
  const newer =
    read !== undefined &&
    latest !== undefined &&
    !save.isPending &&
    (latest === 'deleted' || latest.version > read.version)
      ? latest
      : undefined;
  const cancel = (
    <button type="button" onClick={onClose}>
      Cancel
    </button>
  );
  return (
    <dialog ref={dialog} aria-labelledby="edit-title" onClose={onClose}>
      <h2 id="edit-title">
        Edit plant {plant !== undefined && <span className="id">{String(plant.id)}</span>}
      </h2>
      {plant === undefined ? null : conflict === undefined ? (
        <form onSubmit={submit} noValidate>
          <div className="fields">
            {PLANT_FIELD_NAMES.map((name) =>
              field(
                name,
                PLANT_FIELDS[name].label,
                PLANT_FIELDS[name].required ? {} : { 'aria-describedby': `edit-plant-${name}-hint` },
              ),
            )}
          </div>
          {PLANT_FIELD_NAMES.filter((name) => !PLANT_FIELDS[name].required).map((name) => (
            <p key={name} className="hint" id={`edit-plant-${name}-hint`}>
              {PLANT_FIELDS[name].label}: empty removes it.
            </p>
          ))}
          <div className="dialog-buttons">
            {cancel}
            <button type="submit" disabled={save.isPending}>
              Save
            </button>
          </div>
        </form>
      ) : (
        <div>
          <p role="alert">
            Not saved: someone else changed this plant after you opened it. It is now{' '}
            {describePlant(conflict.current)}.
          </p>
          <p>Your change: {describeChange(conflict.change)}.</p>
          <div className="dialog-buttons">
            {cancel}
            <button
              type="button"
              ref={applyAgain}
              onClick={() => send(conflict.change, conflict.current.version)}
              disabled={save.isPending}
            >
              Apply again
            </button>
          </div>
        </div>
      )}
      {formError !== undefined && (
        <p role="alert" className="error">
          {formError}
        </p>
      )}
      <p role="status" className="note">
        {newer === 'deleted'
          ? 'Someone else deleted this plant.'
          : newer !== undefined && <>Changed by someone else: it is now {describePlant(newer)}.</>}
      </p>
    </dialog>
  );
}

const DELETED = 'Not saved: someone else deleted this plant.';

const notSaved = (message: string) => (
  <>
    The plant was not saved: <UserText>{message}</UserText>
  </>
);
