import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningApi, startInProcess } from '../support/in-process.ts';
import { send, TOKEN } from '../support/http.ts';

/** Writes `chunks` to a raw TCP connection with `gapMs` between them; resolves with what came back and how long the server kept it open. */
async function trickle(
  url: string,
  chunks: string[],
  gapMs: number,
): Promise<{ data: string; closedAfterMs: number }> {
  const { port } = new URL(url);
  const socket: Socket = connect(Number(port), '127.0.0.1');
  const started = performance.now();
  let data = '';
  socket.on('data', (chunk) => {
    data += chunk;
  });
  const closed = new Promise<number>((resolve) =>
    socket.once('close', () => resolve(performance.now() - started)),
  );
  socket.on('error', () => {});
  for (const chunk of chunks) {
    if (socket.destroyed) break;
    socket.write(chunk);
    await new Promise((resolve) => setTimeout(resolve, gapMs));
  }
  const closedAfterMs = await Promise.race([
    closed,
    new Promise<number>((resolve) => setTimeout(() => resolve(Infinity), 8000)),
  ]);
  socket.destroy();
  return { data, closedAfterMs };
}

describe('slow and idle clients', () => {
  let api: RunningApi;
  beforeAll(async () => {
    api = await startInProcess({
      env: {
        HTTP_HEADERS_TIMEOUT_MS: '1000',
        HTTP_REQUEST_TIMEOUT_MS: '2000',
        HTTP_KEEP_ALIVE_TIMEOUT_MS: '500',
      },
    });
  });
  afterAll(async () => {
    await api?.stop();
    api?.cleanup();
  });

  it('drops a client that trickles its headers past HTTP_HEADERS_TIMEOUT_MS', async () => {
    const header = 'POST /plants HTTP/1.1\r\nHost: x\r\n';
    const chunks = [header, ...Array.from({ length: 40 }, (_, i) => `X-Slow-${i}: y\r\n`)];
    const { data, closedAfterMs } = await trickle(api.url, chunks, 100);
    expect(closedAfterMs).toBeLessThan(3500);
    expect(data === '' || data.startsWith('HTTP/1.1 408')).toBe(true);
  });

  it('drops a client that trickles its body past HTTP_REQUEST_TIMEOUT_MS, storing nothing', async () => {
    const head = `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n`;
    const body = Array.from({ length: 60 }, () => ' ');
    const { data, closedAfterMs } = await trickle(api.url, [head, '{"id":7,', ...body], 100);
    expect(closedAfterMs).toBeLessThan(4500);
    expect(data === '' || data.startsWith('HTTP/1.1 408')).toBe(true);
    const answer = await send(`${api.url}/plants/7`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(answer.status).toBe(404);
  });

  it('closes an idle keep-alive connection after HTTP_KEEP_ALIVE_TIMEOUT_MS', async () => {
    const request = 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n';
    const { data, closedAfterMs } = await trickle(api.url, [request], 10);
    expect(data).toMatch(/^HTTP\/1.1 200/);
    expect(closedAfterMs).toBeLessThan(2500);
  });

  it('still serves other clients while slow ones hang', async () => {
    const hanging = Array.from({ length: 20 }, () => trickle(api.url, ['GET /healthz HTTP/1.1\r\n'], 10));
    const answer = await send(`${api.url}/healthz`);
    expect(answer.status).toBe(200);
    await Promise.all(hanging);
  });
});
