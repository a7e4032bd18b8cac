import { type InputHTMLAttributes, type Ref, useRef, useState } from 'react';
import type { FieldErrors } from './new-plant.ts';

type Props = Omit<InputHTMLAttributes<HTMLInputElement>, 'id' | 'value' | 'onChange'> & {
  /** The input's id; its message's is `<id>-error`. */
  id: string;
  label: string;
  value: string;
  onValue(value: string): void;
  /** What is wrong with the value, shown under it and tied to it (`aria-describedby`). */
  error: string | undefined;
  inputRef?: Ref<HTMLInputElement>;
};

/** A labelled text field of a form, with its message when the value is refused. */
export function TextField({ id, label, value, onValue, error, inputRef, ...extra }: Props) {
  const described = [error !== undefined && `${id}-error`, extra['aria-describedby']]
    .filter(Boolean)
    .join(' ');
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      <input
        {...extra}
        id={id}
        ref={inputRef}
        value={value}
        onChange={(event) => onValue(event.target.value)}
        aria-invalid={error !== undefined}
        aria-describedby={described || undefined}
        autoComplete="off"
        spellCheck={false}
        // What is typed takes its own direction (a right-to-left name reads and aligns as such).
        dir="auto"
      />
      {error !== undefined && (
        <p id={`${id}-error`} className="field-error">
          {error}
        </p>
      )}
    </div>
  );
}

/**
 * The state of a form's text fields (values, messages, inputs), ids `<prefix>-<name>`: `field`
 * renders one; `refuse` shows messages and focuses the first field (in `initial`'s order) to fix;
 * `reset` starts over.
 */
export function useTextFields<F extends string>(prefix: string, initial: Record<F, string>) {
  const [fields, setFields] = useState(initial);
  const [errors, setErrors] = useState<FieldErrors<F>>({});
  const inputs = useRef<Partial<Record<F, HTMLInputElement | null>>>({});
  const focus = (name: F) => inputs.current[name]?.focus();
  const refuse = (refused: FieldErrors<F>) => {
    setErrors(refused);
    const first = (Object.keys(initial) as F[]).find((name) => refused[name] !== undefined);
    if (first !== undefined) focus(first);
  };
  const field = (name: F, label: string, extra: InputHTMLAttributes<HTMLInputElement> = {}) => (
    <TextField
      {...extra}
      id={`${prefix}-${name}`}
      label={label}
      value={fields[name]}
      onValue={(value) => setFields({ ...fields, [name]: value })}
      error={errors[name]}
      inputRef={(element) => {
        inputs.current[name] = element;
      }}
    />
  );
  /** Starts over from `values`, without messages. */
  const reset = (values: Record<F, string>) => {
    setFields(values);
    setErrors({});
  };
  return { fields, setFields, reset, refuse, focus, field };
}
