import { MutationCache, QueryCache, QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { useCallback, useEffect, useRef, useState } from 'react';
import { Console } from './console.tsx';
import { describeFailure } from './failure.ts';
import {
  endProviderSession,
  fetchProvider,
  finishSignIn,
  forgetProviderTokens,
  type Provider,
  type ProviderTokens,
  RENEW_BEFORE_MS,
  renewTokens,
  savedProviderTokens,
  startSignIn,
} from './provider-session.ts';
import { forgetToken, saveToken, savedToken } from './session.ts';
import { SignIn } from './sign-in.tsx';
import { createPlantsClient } from './trpc.ts';

/** Marked once the first screen is on the page and answers input (the browser test reads it). */
export const INTERACTIVE_MARK = 'plant-console:interactive';

/** The two screens: `Sign in` until the api accepts a token, then the console. */
export function App() {
  // A reload keeps the tab signed in (sessionStorage); a new tab starts signed out.
  const [token, setToken] = useState(savedToken);
  const [notice, setNotice] = useState<string>();
  // With the api's identity provider: the tokens it gave, renewed before they expire.
  const [providerTokens, setProviderTokens] = useState(savedProviderTokens);
  const [provider, setProvider] = useState<Provider | null>(null);
  const current = useRef(token);
  current.current = token;
  const signedIn = useCallback((tokens: ProviderTokens) => {
    saveToken(tokens.accessToken);
    setProviderTokens(tokens);
    setToken(tokens.accessToken);
  }, []);
  const signOut = useCallback(
    (message?: string) => {
      forgetToken();
      setToken(undefined);
      setNotice(message);
      setProviderTokens(undefined);
      // Signing out on purpose ends the provider's session too; a refused token does not.
      if (providerTokens !== undefined && message === undefined) void endProviderSession(providerTokens);
      else forgetProviderTokens();
    },
    [providerTokens],
  );
  useEffect(() => {
    performance.mark(INTERACTIVE_MARK);
    fetchProvider().then(setProvider, () => setProvider(null));
    finishSignIn().then(
      (tokens) => tokens && signedIn(tokens),
      (error: Error) => setNotice(`Sign-in failed: ${error.message}`),
    );
  }, [signedIn]);
  useEffect(() => {
    if (providerTokens === undefined) return;
    const renew = () =>
      renewTokens(providerTokens).then(signedIn, (error: Error) => signOut(`Signed out: ${error.message}`));
    const timer = setTimeout(renew, Math.max(0, providerTokens.expiresAt - RENEW_BEFORE_MS - Date.now()));
    return () => clearTimeout(timer);
  }, [providerTokens, signedIn, signOut]);

  if (token === undefined) {
    return (
      <SignIn
        notice={notice}
        provider={provider}
        onProvider={(chosen) => startSignIn(chosen).catch((error: Error) => setNotice(error.message))}
        onSignedIn={(accepted) => {
          saveToken(accepted);
          setNotice(undefined);
          setToken(accepted);
        }}
      />
    );
  }
  // Keyed by the pasted token (its client and query cache live and go with it); a provider's
  // session keeps its client across renewals, which read the current token at each call.
  return (
    <Session
      key={providerTokens === undefined ? token : 'provider'}
      token={() => current.current ?? ''}
      onSignOut={signOut}
    />
  );
}

function Session({ token, onSignOut }: { token: () => string; onSignOut(message?: string): void }) {
  const [session] = useState(() => ({
    client: createPlantsClient(token),
    queries: createQueries((message) => onSignOut(`Signed out: ${message}`)),
  }));
  return (
    <QueryClientProvider client={session.queries}>
      <Console client={session.client} onSignOut={onSignOut} />
    </QueryClientProvider>
  );
}

/**
 * Calls that may pass (no answer, 429, a restart's 503) are retried without end, after the wait
 * the api asks for (`Retry-After`) or a doubling one; the console shows that it is retrying. A
 * refused token (401) anywhere signs the tab out. The live events keep the list current, so it
 * is never refetched just because time passed.
 */
function createQueries(onRefused: (message: string) => void): QueryClient {
  const refused = (error: unknown) => {
    const failure = describeFailure(error);
    if (failure.kind === 'unauthorized') onRefused(failure.message);
  };
  return new QueryClient({
    queryCache: new QueryCache({ onError: refused }),
    mutationCache: new MutationCache({ onError: refused }),
    defaultOptions: {
      queries: {
        staleTime: Number.POSITIVE_INFINITY,
        refetchOnWindowFocus: false,
        retry: (_count, error) => describeFailure(error).transient,
        retryDelay: (count, error) => {
          const wait = describeFailure(error).retryAfterSeconds;
          return wait !== undefined ? wait * 1000 : Math.min(500 * 2 ** count, 10_000);
        },
      },
      mutations: { retry: false },
    },
  });
}
