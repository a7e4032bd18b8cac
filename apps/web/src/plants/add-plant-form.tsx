import type { NewPlant } from '@plant-store/schema';
import { useMutation } from '@tanstack/react-query';
import { type FormEvent, useRef, useState } from 'react';
import { describeFailure } from '../failure.ts';
import type { PlantsClient } from '../trpc.ts';
import type { LiveChange } from './merge-live.ts';
import { type FieldErrors, type NewPlantFields, parseNewPlant } from './new-plant.ts';
import { TextField } from './text-field.tsx';

const EMPTY: NewPlantFields = { id: '', name: '', tag: '' };
const FIELDS = ['id', 'name', 'tag'] as const;

type Props = {
  client: PlantsClient;
  /** A plant this form created, shown at once (the live event follows). */
  onAdded(change: LiveChange): void;
  /** Tells people what happened (a polite live region). */
  announce(message: string): void;
};

/**
 * `ID`, `Name`, `Tag` and `Add plant`. The form is checked with the api's own schema before
 * anything is sent; a refusal from the api is shown beside the field it concerns (an id that
 * already exists, 409) or under the form. Focus goes to the first field to fix, or back to `ID`
 * for the next plant.
 */
export function AddPlantForm({ client, onAdded, announce }: Props) {
  const [fields, setFields] = useState<NewPlantFields>(EMPTY);
  const [errors, setErrors] = useState<FieldErrors>({});
  const [formError, setFormError] = useState<string>();
  const inputs = useRef<Partial<Record<keyof NewPlantFields, HTMLInputElement | null>>>({});
  const create = useMutation({
    mutationFn: (plant: NewPlant) => client.plants.create.mutate(plant),
  });

  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (create.isPending) return;
    const parsed = parseNewPlant(fields);
    setFormError(undefined);
    if (!parsed.ok) {
      setErrors(parsed.errors);
      inputs.current[FIELDS.find((field) => parsed.errors[field] !== undefined)!]?.focus();
      return;
    }
    setErrors({});
    const { plant } = parsed;
    create.mutate(plant, {
      onSuccess: () => {
        // The answer carries no version (REST has it in the ETag only): version 0 ranks below the
        // created event's, which replaces it when it arrives.
        onAdded({ type: 'saved', plant: { ...plant, version: 0n }, at: performance.now() });
        announce(`Added plant ${plant.id} (${plant.name}).`);
        setFields(EMPTY);
        inputs.current.id?.focus();
      },
      onError: (error) => {
        const failure = describeFailure(error);
        // A refused token signs the console out (see app.tsx): nothing to show here.
        if (failure.kind === 'unauthorized') return;
        if (failure.kind === 'conflict') {
          setErrors({ id: failure.message });
          inputs.current.id?.focus();
        } else {
          setFormError(`The plant was not added: ${failure.message}`);
        }
      },
    });
  };

  const field = (
    name: keyof NewPlantFields,
    label: string,
    extra: React.InputHTMLAttributes<HTMLInputElement>,
  ) => (
    <TextField
      {...extra}
      id={`new-plant-${name}`}
      label={label}
      value={fields[name]}
      onValue={(value) => setFields({ ...fields, [name]: value })}
      error={errors[name]}
      inputRef={(element) => {
        inputs.current[name] = element;
      }}
    />
  );

  return (
    <section aria-labelledby="add-heading" className="add">
      <h2 id="add-heading">Add a plant</h2>
      <form onSubmit={submit} noValidate>
        <div className="fields">
          {/* Text, not type=number: a number input would round ids beyond 2^53. */}
          {field('id', 'ID', { inputMode: 'numeric', 'aria-describedby': 'new-plant-id-hint' })}
          {field('name', 'Name', {})}
          {field('tag', 'Tag', { 'aria-describedby': 'new-plant-tag-hint' })}
          <button type="submit">Add plant</button>
        </div>
        <p className="hint">
          <span id="new-plant-id-hint">ID: an integer (64-bit). </span>
          <span id="new-plant-tag-hint">Tag: optional.</span>
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
