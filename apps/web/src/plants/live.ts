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
  /**
   * An event-log position the shown list holds every change up to (`resumePosition`), or
   * `undefined`: where a stream that saw no event resumes from.
   */
  resumeFrom(): bigint | undefined;
};

/**
 * Follows `plants.events` while mounted. tRPC resumes after the last delivered event on every
 * reconnection (a dropped connection, an api restart). A stream that has delivered no event yet has
 * no id to resume from, and would start again from "now": it is opened again from `resumeFrom()`
 * instead (the events since the list was read follow; those it already holds change nothing), or,
 * with no position known or one older than the api keeps (410), from now with `onFresh` asking for
 * a new read.
 */
export function useLiveEvents(client: PlantsClient, handlers: LiveHandlers): LiveState {
  const [live, setLive] = useState<LiveState>({ state: 'connecting' });
  // The latest handlers, without resubscribing when they change.
  const onChange = useEffectEvent(handlers.onChange);
  const onFresh = useEffectEvent(handlers.onFresh);
  const onUnauthorized = useEffectEvent(handlers.onUnauthorized);
  const resumeFrom = useEffectEvent(handlers.resumeFrom);

  useEffect(() => {
    let subscription: { unsubscribe(): void } | undefined;
    const subscribe = (after?: bigint) => {
      // Resumable from a position given, or once an event arrived (tRPC then resumes after it).
      let resumable = after !== undefined;
      // tRPC reports a connection both as started and as pending: act once per connection.
      let up = false;
      const connected = () => {
        if (up) return;
        up = true;
        setLive({ state: 'live' });
        if (!resumable) onFresh();
      };
      subscription = client.plants.events.subscribe(after === undefined ? {} : { after }, {
        onStarted: connected,
        onData: ({ data }) => {
          resumable = true;
          onChange(toChange(data, performance.now()));
        },
        onConnectionStateChange: (connection) => {
          if (connection.state === 'connecting' && connection.error !== null) {
            up = false;
            setLive({ state: 'connecting', failure: describeFailure(connection.error) });
            const from = resumable ? undefined : resumeFrom();
            if (from !== undefined) {
              subscription?.unsubscribe();
              subscribe(from);
            }
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
      });
    };
    subscribe();
    return () => subscription?.unsubscribe();
  }, [client]);

  return live;
}
