import pg from 'pg';

/** How long to wait before connecting again after the LISTEN connection is lost. */
const RECONNECT_MS = 500;

/**
 * Keeps one connection LISTENing on `channel` and calls `onNotify` for every notification, and once
 * after each (re)connection, since notifications sent while it was down are lost. A lost connection
 * is reopened every RECONNECT_MS until `stop()`. Never throws: the callers poll as well.
 */
export function listen(options: { url: string; channel: string; timeoutMs: number; onNotify: () => void }): {
  stop(): Promise<void>;
} {
  const { url, channel, timeoutMs, onNotify } = options;
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
    next.on('notification', onNotify);
    try {
      await next.connect();
      // A quoted identifier: the channel name is ours, never a client's.
      await next.query(`LISTEN "${channel}"`);
      onNotify();
    } catch {
      reconnect();
    }
  }

  void connect();
  return {
    async stop() {
      stopped = true;
      clearTimeout(retry);
      const last = client;
      client = undefined;
      await last?.end().catch(() => {});
    },
  };
}
