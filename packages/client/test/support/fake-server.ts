import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request the fake server got. */
export type Seen = { method: string; url: string; headers: IncomingMessage['headers']; body: string };

export type FakeServer = {
  url: string;
  /** Every request so far, in order. */
  requests: Seen[];
  close(): Promise<void>;
};

/**
 * A broken or hostile server on loopback, a real node:http server: `answer` writes each response
 * as the test wants it (it gets the request and how many came before it). Every request is kept.
 */
export async function startFakeServer(
  answer: (res: ServerResponse, request: Seen, index: number) => void,
): Promise<FakeServer> {
  const requests: Seen[] = [];
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const seen = {
      method: req.method ?? '',
      url: req.url ?? '',
      headers: req.headers,
      body: Buffer.concat(chunks).toString('utf8'),
    };
    requests.push(seen);
    answer(res, seen, requests.length - 1);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** Answers `body` as JSON text (written as given: a hostile server need not be JSON.stringify). */
export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(typeof body === 'string' ? body : JSON.stringify(body));
}
