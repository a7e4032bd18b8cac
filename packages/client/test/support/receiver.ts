import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { waitFor } from './events.ts';

/** One request a receiver got: its headers (lowercase names) and its body as sent. */
export type Received = { path: string; headers: Record<string, string>; body: string };

export type Receiver = {
  url: string;
  received: Received[];
  /** Resolves once `count` requests have arrived; fails after `timeoutMs`. */
  until(count: number, timeoutMs?: number): Promise<Received[]>;
  close(): Promise<void>;
};

/**
 * A webhook receiver on loopback: a real node:http server that keeps every request and answers
 * 200. Tests verify the signatures themselves, with the secret the client was given.
 */
export async function startReceiver(): Promise<Receiver> {
  const received: Received[] = [];
  const server = createServer(async (req, res) => {
    const body = await readBody(req);
    received.push({ path: req.url ?? '', headers: headersOf(req), body });
    res.statusCode = 200;
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    async until(count, timeoutMs = 20_000) {
      await waitFor(() => received.length >= count, {
        timeoutMs,
        failure: () => `the receiver got ${received.length} of ${count} requests within ${timeoutMs} ms`,
      });
      return received.slice(0, count);
    },
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function headersOf(req: IncomingMessage): Record<string, string> {
  return Object.fromEntries(Object.entries(req.headers).map(([name, value]) => [name, String(value)]));
}
