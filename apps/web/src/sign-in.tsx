import { type FormEvent, useState } from 'react';
import { describeFailure } from './failure.ts';
import type { Provider } from './provider-session.ts';
import { createPlantsClient } from './trpc.ts';

type Props = {
  /** Why the user is here again (the api refused the token), shown until they sign in. */
  notice: string | undefined;
  /** The api's identity provider, when it names one. */
  provider: Provider | null;
  onProvider(provider: Provider): void;
  onSignedIn(token: string): void;
};

/**
 * `Token` and `Sign in`: the token is tried with one list call, and kept only when the api
 * accepts it (a token without the read scope is accepted: the console then says what it cannot
 * do). A refusal shows the api's own message.
 */
export function SignIn({ notice, provider, onProvider, onSignedIn }: Props) {
  const [token, setToken] = useState('');
  const [error, setError] = useState(notice);
  const [pending, setPending] = useState(false);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const candidate = token.trim();
    if (pending) return;
    if (candidate === '') return setError('Enter a bearer token of the api.');
    setPending(true);
    setError(undefined);
    try {
      await createPlantsClient(candidate).plants.list.query({ limit: 1 });
      onSignedIn(candidate);
    } catch (cause) {
      const failure = describeFailure(cause);
      if (failure.kind === 'forbidden') onSignedIn(candidate);
      else setError(failure.message);
    } finally {
      setPending(false);
    }
  };

  return (
    <main className="sign-in">
      <h1>Plant Store</h1>
      {provider && (
        <button type="button" onClick={() => onProvider(provider)}>
          Sign in with {new URL(provider.issuer).host}
        </button>
      )}
      <form onSubmit={submit} noValidate aria-labelledby="sign-in-heading">
        <h2 id="sign-in-heading">Sign in</h2>
        <p>The console calls the api with one of its bearer tokens, kept only in this tab.</p>
        <label htmlFor="token">Token</label>
        <input
          id="token"
          type="password"
          value={token}
          onChange={(event) => setToken(event.target.value)}
          autoComplete="off"
          spellCheck={false}
          aria-invalid={error !== undefined}
          aria-describedby="token-error"
        />
        <p id="token-error" role="alert" className="error">
          {error}
        </p>
        <button type="submit" aria-disabled={pending}>
          {pending ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}
