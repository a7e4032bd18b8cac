/**
 * `pnpm dev`: Vite's dev server serves the console and proxies /trpc to the api, so the console
 * talks to the same origin in development as under /app/.
 */
import { type ApiProcess, startApiProcess } from '@plant-store/api/testing';
import { createServer, type ViteDevServer } from 'vite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const TOKEN = 'dev-server-token-0123456789abcdef';
const ROOT = new URL('../..', import.meta.url).pathname;

let api: ApiProcess;
let vite: ViteDevServer;
let url: string;

beforeAll(async () => {
  api = await startApiProcess({ token: TOKEN });
  // vite.config.ts sends /trpc to PLANTS_API_URL (the api's default address when unset).
  process.env.PLANTS_API_URL = api.url;
  vite = await createServer({ root: ROOT, logLevel: 'silent', server: { port: 0, host: '127.0.0.1' } });
  await vite.listen();
  url = vite.resolvedUrls!.local[0]!.replace(/\/$/, '');
});

afterAll(async () => {
  delete process.env.PLANTS_API_URL;
  await vite?.close();
  await api?.stop();
  api?.cleanup();
});

describe('the Vite dev server (pnpm dev)', () => {
  it('serves the console with its module entry', async () => {
    const page = await fetch(`${url}/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<script type="module" src="./src/main.tsx"></script>');
  });

  it('proxies tRPC calls and the event stream to the api, with the bearer token', async () => {
    const authorization = `Bearer ${TOKEN}`;
    const created = await fetch(`${api.url}/plants`, {
      method: 'POST',
      headers: { authorization, 'content-type': 'application/json' },
      body: '{"id":9007199254740993,"name":"Dev fern"}',
    });
    expect(created.status).toBe(200);
    const version = created.headers.get('etag')!.replaceAll('"', '');
    const input = encodeURIComponent(JSON.stringify({ json: { limit: 10 } }));
    const list = await fetch(`${url}/trpc/plants.list?input=${input}`, { headers: { authorization } });
    expect(list.status).toBe(200);
    expect(await list.text()).toBe(
      `{"result":{"data":{"json":{"plants":[{"id":"9007199254740993","name":"Dev fern","version":"${version}"}],` +
        '"next":null},"meta":{"values":{"plants.0.id":["bigint"],"plants.0.version":["bigint"]},"v":1}}}}',
    );

    const events = await fetch(`${url}/trpc/plants.events?input=${encodeURIComponent('{"json":{}}')}`, {
      headers: { authorization, accept: 'text/event-stream' },
    });
    expect(events.status).toBe(200);
    expect(events.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const reader = events.body!.getReader();
    const { value } = await reader.read();
    expect(new TextDecoder().decode(value)).toContain('event: connected');
    await reader.cancel();
  });
});
