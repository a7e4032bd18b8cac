import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { openConnections } from '../../src/webhooks/connections.ts';
import { AttemptCut, sendDelivery, webhookSigner } from '../../src/webhooks/send.ts';

// One attempt against a receiver on loopback (the worker's tests run it through the built api).
describe('sendDelivery', () => {
  const secret = `whsec_${randomBytes(32).toString('base64')}`;
  const delivery = (url: string) => ({
    id: `msg_${'0'.repeat(32)}`,
    url,
    payload: '{"id":1}',
    attempts: 1,
    createdAt: new Date(),
  });
  const connections = openConnections({ timeoutMs: 5_000 });
  afterAll(() => connections.destroy());

  it('is cut short by an AttemptCut, as by an AbortSignal: abandoned, not failed', async () => {
    const server = createServer(() => {});
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
      const cut = new AttemptCut();
      const outcome = sendDelivery(delivery(url), {
        connections,
        sign: webhookSigner(secret),
        timeoutMs: 60_000,
        abort: cut,
      });
      setTimeout(() => cut.abort(), 50);
      await expect(outcome).resolves.toEqual({ ok: false, abandoned: true, error: 'abandoned at shutdown' });
      const signal = new AbortController();
      const second = sendDelivery(delivery(url), {
        connections,
        sign: webhookSigner(secret),
        timeoutMs: 60_000,
        abort: signal.signal,
      });
      signal.abort();
      await expect(second).resolves.toMatchObject({ ok: false, abandoned: true });
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('sends to the URL as given: its host, port, path and query, IPv6 literals included', async () => {
    const seen: string[] = [];
    const server = createServer((request, response) => {
      seen.push(`${request.method} ${request.headers.host} ${request.url} ${request.headers['webhook-id']}`);
      response.end();
    });
    await new Promise<void>((resolve) => server.listen(0, '::', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      for (const url of [
        `http://127.0.0.1:${port}/hook/a?b=c&d=%20e`,
        `http://[::1]:${port}/`,
        `http://localhost:${port}`,
      ]) {
        const outcome = sendDelivery(delivery(url), {
          connections,
          sign: webhookSigner(secret),
          timeoutMs: 5_000,
          abort: new AttemptCut(),
        });
        await expect(outcome).resolves.toEqual({ ok: true, status: 200 });
      }
      const id = delivery('').id;
      expect(seen).toStrictEqual([
        `POST 127.0.0.1:${port} /hook/a?b=c&d=%20e ${id}`,
        `POST [::1]:${port} / ${id}`,
        `POST localhost:${port} / ${id}`,
      ]);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('refuses a URL with credentials every time (its parse is kept), never sending them', async () => {
    for (let i = 0; i < 2; i++) {
      await expect(
        sendDelivery(delivery('http://user:secret-pass@127.0.0.1:1/hook?token=q'), {
          connections,
          sign: webhookSigner(secret),
          timeoutMs: 1_000,
          abort: new AttemptCut(),
        }),
      ).resolves.toEqual({
        ok: false,
        abandoned: false,
        error:
          'request failed (Request cannot be constructed from a URL that includes credentials: http://127.0.0.1:1)',
      });
    }
  });
});
