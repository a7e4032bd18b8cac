import { createServer, connect as netConnect, type Socket } from 'node:net';

/**
 * Outages are made with a TCP proxy a test controls, in front of the real server (PostgreSQL,
 * Redis), so other tests using that server at the same time are not disturbed.
 * - `down`: every connection is reset and new ones are reset at once (a stopped or crashed server).
 * - `blackhole`: connections stay open and nothing comes back (a partition, a hung server);
 *   returning to `up` then resets them, as a partition that heals does to stale TCP connections.
 * - `cut-answer`: the next new connection's request is forwarded, and the connection is reset when
 *   the answer's first bytes come back (they are dropped): the server did the work, the client
 *   never hears of it. Then the proxy is `up` again.
 */
export type Mode = 'up' | 'down' | 'blackhole' | 'cut-answer';

export type Proxy = { port: number; setMode(mode: Mode): void; close(): Promise<void> };

export async function startProxy(target: { host: string; port: number }): Promise<Proxy> {
  type Pair = { client: Socket; upstream?: Socket };
  const pairs = new Set<Pair>();
  let mode: Mode = 'up';
  const cut = (pair: Pair) => {
    pair.client.resetAndDestroy();
    pair.upstream?.destroy();
  };
  const server = createServer((client) => {
    client.on('error', () => {});
    if (mode === 'down') {
      client.resetAndDestroy();
      return;
    }
    const pair: Pair = { client };
    pairs.add(pair);
    client.on('close', () => {
      pairs.delete(pair);
      pair.upstream?.destroy();
    });
    if (mode === 'blackhole') return;
    const upstream = netConnect(target.port, target.host);
    pair.upstream = upstream;
    upstream.on('error', () => client.destroy());
    upstream.on('close', () => client.destroy());
    client.pipe(upstream);
    if (mode === 'cut-answer') {
      mode = 'up';
      upstream.once('data', () => cut(pair));
      return;
    }
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('proxy has no port');
  return {
    port: address.port,
    setMode(next) {
      const previous = mode;
      mode = next;
      for (const pair of pairs) {
        if (next === 'down' || (next === 'up' && previous === 'blackhole')) cut(pair);
        else if (next === 'blackhole') {
          pair.client.unpipe();
          pair.upstream?.unpipe();
          pair.client.pause();
          pair.upstream?.pause();
        }
      }
    },
    async close() {
      for (const pair of pairs) cut(pair);
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
