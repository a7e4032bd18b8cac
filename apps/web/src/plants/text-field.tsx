import type { InputHTMLAttributes, Ref } from 'react';

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
      />
      {error !== undefined && (
        <p id={`${id}-error`} className="field-error">
          {error}
        </p>
      )}
    </div>
  );
}
