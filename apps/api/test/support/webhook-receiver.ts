import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { Webhook } from 'standardwebhooks';

/** One request the receiver got, and whether its signature verified with the receiver-side library. */
export type Received = {
  path: string;
  id: string;
  timestamp: string;
  signature: string;
  contentType: string;
  /** The `webhook-event` header (registered endpoints' deliveries carry one), or undefined. */
  event: string | undefined;
  /** The W3C `traceparent` header (sent with tracing on), or undefined. */
  traceparent: string | undefined;
  body: string;
  verified: boolean;
  /** `performance.now()` when it arrived. */
  at: number;
  /** Which of the receiver's connections it came on: 1 for the first one opened, and so on. */
  connection: number;
};

/** What to answer: a status, or `'hang'` to never answer (until the receiver closes). */
export type Answer = number | 'hang';

export type Receiver = {
  url: string;
  port: number;
  received: Received[];
  /** Resolves once `predicate` holds for what was received; rejects after `timeoutMs`. */
  waitFor(predicate: (received: Received[]) => boolean, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
};

/** A Standard Webhooks secret as a subscriber is given one: `whsec_` and 32 random bytes in base64. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/**
 * A webhook subscriber on loopback: a real node:http server that verifies each request's signature
 * with `standardwebhooks` (as a subscriber would) and answers `answer(request, index)`; a request
 * that fails verification is answered 400. `secret` may be a function, asked at each request: a
 * registered endpoint's secret is known only once it is registered (at this receiver's URL).
 */
export async function startReceiver(
  secret: string | (() => string),
  options: { port?: number; answer?: (request: Received, index: number) => Answer | Promise<Answer> } = {},
): Promise<Receiver> {
  const received: Received[] = [];
  const connections = new WeakMap<object, number>();
  let opened = 0;
  const server = createServer(async (req, res) => {
    const body = await readBody(req);
    let verified = true;
    try {
      new Webhook(typeof secret === 'string' ? secret : secret()).verify(body, headersOf(req), {
        jsonParse: false,
      });
    } catch {
      verified = false;
    }
    const request: Received = {
      path: req.url ?? '',
      id: String(req.headers['webhook-id']),
      timestamp: String(req.headers['webhook-timestamp']),
      signature: String(req.headers['webhook-signature']),
      contentType: String(req.headers['content-type']),
      event: req.headers['webhook-event'] as string | undefined,
      traceparent: req.headers.traceparent as string | undefined,
      body,
      verified,
      at: performance.now(),
      connection: connections.get(req.socket) ?? 0,
    };
    received.push(request);
    const answer = verified ? ((await options.answer?.(request, received.length - 1)) ?? 200) : 400;
    if (answer === 'hang') return;
    res.statusCode = answer;
    res.end();
  });
  server.on('connection', (socket) => {
    opened += 1;
    connections.set(socket, opened);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    received,
    async waitFor(predicate, timeoutMs = 10_000) {
      const deadline = performance.now() + timeoutMs;
      while (!predicate(received)) {
        if (performance.now() > deadline) {
          throw new Error(
            `receiver: condition not met within ${timeoutMs} ms; got ${JSON.stringify(received)}`,
          );
        }
        await sleep(20);
      }
    },
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** A loopback port nothing listens on (yet): a receiver that is down. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function headersOf(req: IncomingMessage): Record<string, string> {
  return Object.fromEntries(Object.entries(req.headers).map(([name, value]) => [name, String(value)]));
}
