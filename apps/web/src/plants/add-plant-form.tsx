import { type NewPlant, PLANT_FIELD_NAMES, PLANT_FIELDS } from '@plant-store/schema';
import { useMutation } from '@tanstack/react-query';
import { type FormEvent, type ReactNode, useState } from 'react';
import { describeFailure } from '../failure.ts';
import type { PlantsClient } from '../trpc.ts';
import { UserText } from '../user-text.tsx';
import type { LiveChange } from './merge-live.ts';
import { EMPTY_NEW_PLANT as EMPTY, parseNewPlant } from './new-plant.ts';
import { useTextFields } from './text-field.tsx';

type Props = {
  client: PlantsClient;
  /** A plant this form created, shown at once (the live event follows). */
  onAdded(change: LiveChange): void;
  /** Tells people what happened (a polite live region). */
  announce(message: ReactNode): void;
};

/**
 * `ID`, a field per plant field (`Name`, `Tag`) and `Add plant`. The form is checked with the api's own schema before
 * anything is sent; a refusal from the api is shown beside the field it concerns (an id that
 * already exists, 409) or under the form. Focus goes to the first field to fix, or back to `ID`
 * for the next plant.
 */
/** An optional field says so in a hint. */
const hinted = (name: keyof typeof PLANT_FIELDS) => !PLANT_FIELDS[name].required;

export function AddPlantForm({ client, onAdded, announce }: Props) {
  const { fields, setFields, refuse, focus, field } = useTextFields('new-plant', EMPTY);
  const [formError, setFormError] = useState<ReactNode>();
  const create = useMutation({
    mutationFn: (plant: NewPlant) => client.plants.create.mutate(plant),
  });

  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (create.isPending) return;
    const parsed = parseNewPlant(fields);
    setFormError(undefined);
    refuse(parsed.ok ? {} : parsed.errors);
    if (!parsed.ok) return;
    const { plant } = parsed;
    create.mutate(plant, {
      onSuccess: () => {
        // The answer carries no version (REST has it in the ETag only): version 0 ranks below the
        // created event's, which replaces it when it arrives.
        onAdded({ type: 'saved', plant: { ...plant, version: 0n }, at: performance.now() });
        announce(
          <>
            Added plant {String(plant.id)} (<UserText>{plant.name}</UserText>).
          </>,
        );
        setFields(EMPTY);
        focus('id');
      },
      onError: (error) => {
        const failure = describeFailure(error);
        // A refused token signs the console out (see app.tsx): nothing to show here.
        if (failure.kind === 'unauthorized') return;
        if (failure.kind === 'conflict') {
          refuse({ id: failure.message });
        } else {
          setFormError(
            <>
              The plant was not added: <UserText>{failure.message}</UserText>
            </>,
          );
        }
      },
    });
  };

  return (
    <section aria-labelledby="add-heading" className="add">
      <h2 id="add-heading">Add a plant</h2>
      <form onSubmit={submit} noValidate>
        <div className="fields">
          {/* Text, not type=number: a number input would round ids beyond 2^53. */}
          {field('id', 'ID', { inputMode: 'numeric', 'aria-describedby': 'new-plant-id-hint' })}
          {PLANT_FIELD_NAMES.map((name) =>
            field(
              name,
              PLANT_FIELDS[name].label,
              hinted(name) ? { 'aria-describedby': `new-plant-${name}-hint` } : {},
            ),
          )}
          <button type="submit">Add plant</button>
        </div>
        <p className="hint">
          <span id="new-plant-id-hint">ID: an integer (64-bit). </span>
          {PLANT_FIELD_NAMES.filter(hinted).map((name) => (
            <span key={name} id={`new-plant-${name}-hint`}>
              {PLANT_FIELDS[name].label}: optional.
            </span>
          ))}
        </p>
        {formError !== undefined && (
          <p role="alert" className="error">
            {formError}
          </p>
        )}
      </form>
    </section>
  );
}
