import pg from 'pg';
import type { EventLog } from '../contract.ts';
import type { PostgresStoreOptions } from './connection.ts';

const RECONNECT_MS = 500;

/** `EventLog.watch`: one connection LISTENs, reopened when lost; listeners also hear each (re)connection. */
export function notifications({
  url,
  channel,
  timeoutMs,
}: Pick<PostgresStoreOptions, 'url' | 'timeoutMs'> & { channel: string }) {
  const listeners = new Set<() => void>();
  const notify = () => {
    for (const listener of listeners) listener();
  };
  let started = false;
  let stopped = false;
  let client: pg.Client | undefined;
  let retry: NodeJS.Timeout | undefined;

  async function connect(): Promise<void> {
    if (stopped) return;
    const next = new pg.Client({
      connectionString: url,
      connectionTimeoutMillis: timeoutMs,
      keepAlive: true,
      application_name: 'plant-store-api-listen',
    });
    client = next;
    const reconnect = () => {
      if (client !== next) return;
      client = undefined;
      next.end().catch(() => {});
      if (!stopped) retry = setTimeout(connect, RECONNECT_MS);
    };
    next.on('error', reconnect);
    next.on('end', reconnect);
    next.on('notification', notify);
    try {
      await next.connect();
      // A quoted identifier: the channel name is ours, never a client's.
      await next.query(`LISTEN "${channel}"`);
      notify();
    } catch {
      reconnect();
    }
  }

  const watch: EventLog['watch'] = (listener) => {
    listeners.add(listener);
    if (!started) void connect();
    started = true;
    return () => listeners.delete(listener);
  };
  return {
    watch,
    async stop() {
      stopped = true;
      clearTimeout(retry);
      const last = client;
      client = undefined;
      await last?.end().catch(() => {});
    },
  };
}
