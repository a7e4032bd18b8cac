import { useEffect, useEffectEvent, useState } from 'react';
import { describeFailure, type Failure } from '../failure.ts';
import type { PlantsClient } from '../trpc.ts';
import { type LiveChange, toChange } from './merge-live.ts';

/** The live stream: `live` while events flow, `connecting` (with why, after a failure), or `stopped`. */
export type LiveState =
  | { state: 'connecting'; failure?: Failure }
  | { state: 'live' }
  | { state: 'stopped'; failure: Failure };

export type LiveHandlers = {
  /** Each committed change, in commit order. */
  onChange(change: LiveChange): void;
  /** The stream (re)connected without a point to resume from: changes may be missing; read again. */
  onFresh(): void;
  /** The token was refused (401). */
  onUnauthorized(failure: Failure): void;
};

/**
 * Follows `plants.events` while mounted. tRPC resumes after the last delivered event on every
 * reconnection (a dropped connection, an api restart), so only a start with no event seen yet, or
 * a resume from before what the api still keeps (410), can miss changes: then `onFresh` asks for a
 * new read.
 */
export function useLiveEvents(client: PlantsClient, handlers: LiveHandlers): LiveState {
  const [live, setLive] = useState<LiveState>({ state: 'connecting' });
  // The latest handlers, without resubscribing when they change.
  const onChange = useEffectEvent(handlers.onChange);
  const onFresh = useEffectEvent(handlers.onFresh);
  const onUnauthorized = useEffectEvent(handlers.onUnauthorized);

  useEffect(() => {
    let subscription: { unsubscribe(): void } | undefined;
    const subscribe = () => {
      // Until a first event arrives the stream has no id to resume from: a reconnection then
      // starts from "now", and whatever committed while it was away must be read again.
      let resumable = false;
      // tRPC reports a connection both as started and as pending: act once per connection.
      let up = false;
      const connected = () => {
        if (up) return;
        up = true;
        setLive({ state: 'live' });
        if (!resumable) onFresh();
      };
      subscription = client.plants.events.subscribe(
        {},
        {
          onStarted: connected,
          onData: ({ data }) => {
            resumable = true;
            onChange(toChange(data, performance.now()));
          },
          onConnectionStateChange: (connection) => {
            if (connection.state === 'connecting' && connection.error !== null) {
              up = false;
              setLive({ state: 'connecting', failure: describeFailure(connection.error) });
            } else if (connection.state === 'pending') connected();
          },
          onError: (error) => {
            const failure = describeFailure(error);
            if (failure.kind === 'unauthorized') return onUnauthorized(failure);
            if (failure.kind === 'gone') {
              // Resuming from before what the api keeps: start over and read the list again.
              subscription?.unsubscribe();
              subscribe();
              return;
            }
            setLive({ state: 'stopped', failure });
          },
        },
      );
    };
    subscribe();
    return () => subscription?.unsubscribe();
  }, [client]);

  return live;
}
