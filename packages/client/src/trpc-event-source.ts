import { EventSource } from 'eventsource';

/**
 * The least `reconnectAfterInactivityMs` a server may set: tRPC reconnects a subscription after
 * that long without a message, and a server saying 1 ms had it reconnect 80 times a second.
 */
export const MIN_INACTIVITY_MS = 1_000;

/**
 * The EventSource of the tRPC client's subscriptions: the options a server sends in tRPC's
 * `connected` event (read by tRPC's stream consumer) have their `reconnectAfterInactivityMs`
 * raised to MIN_INACTIVITY_MS.
 */
export class TrpcEventSource extends EventSource {
  override dispatchEvent(event: Event): boolean {
    if (event.type !== 'connected' || !(event instanceof MessageEvent)) return super.dispatchEvent(event);
    const { data, lastEventId, origin } = event;
    return super.dispatchEvent(
      new MessageEvent('connected', { data: withInactivityFloor(data), lastEventId, origin }),
    );
  }
}

function withInactivityFloor(data: unknown): unknown {
  let options: unknown;
  try {
    options = JSON.parse(String(data));
  } catch {
    return data; // tRPC reports it as it is
  }
  if (typeof options !== 'object' || options === null) return data;
  const ms = (options as { reconnectAfterInactivityMs?: unknown }).reconnectAfterInactivityMs;
  // 0 turns the timeout off; anything else shorter than the floor is raised to it.
  if (typeof ms !== 'number' || ms === 0 || ms >= MIN_INACTIVITY_MS) return data;
  return JSON.stringify({ ...options, reconnectAfterInactivityMs: MIN_INACTIVITY_MS });
}
