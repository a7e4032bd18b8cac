import { MutationCache, QueryCache, QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { useCallback, useEffect, useState } from 'react';
import { Console } from './console.tsx';
import { describeFailure } from './failure.ts';
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
  const signOut = useCallback((message?: string) => {
    forgetToken();
    setToken(undefined);
    setNotice(message);
  }, []);
  useEffect(() => {
    performance.mark(INTERACTIVE_MARK);
  }, []);

  if (token === undefined) {
    return (
      <SignIn
        notice={notice}
        onSignedIn={(accepted) => {
          saveToken(accepted);
          setNotice(undefined);
          setToken(accepted);
        }}
      />
    );
  }
  // Keyed by the token: its client and query cache live and go with it.
  return <Session key={token} token={token} onSignOut={signOut} />;
}

function Session({ token, onSignOut }: { token: string; onSignOut(message?: string): void }) {
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
