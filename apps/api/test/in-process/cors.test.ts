import { afterAll, describe, expect, it } from 'vitest';
import { postPlant, send, TOKEN } from '../support/http.ts';
import { type RunningApi, startInProcess } from '../support/in-process.ts';

const started: RunningApi[] = [];
afterAll(async () => {
  for (const api of started) {
    await api.stop();
    api.cleanup();
  }
});
async function start(env: Record<string, string> = {}): Promise<RunningApi> {
  const api = await startInProcess({ env });
  started.push(api);
  return api;
}
const preflight = (api: RunningApi, origin: string) =>
  send(`${api.url}/plants`, {
    method: 'OPTIONS',
    headers: {
      origin,
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'authorization,content-type',
    },
  });

describe('CORS', () => {
  it('is off by default: no Access-Control headers for any origin', async () => {
    const api = await start();
    expect(
      (await preflight(api, 'https://app.example')).headers.get('access-control-allow-origin'),
    ).toBeNull();
    const answer = await send(`${api.url}/plants`, {
      headers: { origin: 'https://app.example', authorization: `Bearer ${TOKEN}` },
    });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('allows exactly the configured origins, with the headers a browser client needs', async () => {
    const api = await start({ CORS_ORIGINS: 'https://app.example' });
    const allowed = await preflight(api, 'https://app.example');
    expect(allowed.status).toBe(204);
    expect(allowed.headers.get('access-control-allow-origin')).toBe('https://app.example');
    expect(allowed.headers.get('access-control-allow-headers')).toContain('Authorization');
    expect(allowed.headers.get('access-control-allow-methods')?.split(',').sort()).toStrictEqual([
      'DELETE',
      'GET',
      'PATCH',
      'POST',
    ]);
    const answer = await postPlant(api.url, '{"id":1,"name":"Fern"}', {
      origin: 'https://app.example',
      authorization: `Bearer ${TOKEN}`,
      'content-type': 'application/json',
    });
    expect(answer.headers.get('access-control-allow-origin')).toBe('https://app.example');
    expect(answer.headers.get('access-control-expose-headers')).toContain('X-Request-Id');
    expect(
      (await preflight(api, 'https://evil.example')).headers.get('access-control-allow-origin'),
    ).toBeNull();
  });

  it('lets a browser client update with If-Match and read the ETag, as every other client can', async () => {
    const api = await start({ CORS_ORIGINS: 'https://app.example' });
    const origin = 'https://app.example';
    const created = await postPlant(api.url, '{"id":7,"name":"Fern"}', {
      origin,
      authorization: `Bearer ${TOKEN}`,
      'content-type': 'application/json',
    });
    expect(created.status).toBe(200);
    const allowed = await send(`${api.url}/plants/7`, {
      method: 'OPTIONS',
      headers: {
        origin,
        'access-control-request-method': 'PATCH',
        'access-control-request-headers': 'authorization,content-type,if-match,idempotency-key',
      },
    });
    expect(allowed.status).toBe(204);
    const allowedHeaders = allowed.headers.get('access-control-allow-headers')!.toLowerCase().split(',');
    for (const header of ['authorization', 'content-type', 'if-match', 'idempotency-key', 'if-none-match']) {
      expect(allowedHeaders).toContain(header);
    }
    const updated = await send(`${api.url}/plants/7`, {
      method: 'PATCH',
      headers: {
        origin,
        authorization: `Bearer ${TOKEN}`,
        'content-type': 'application/merge-patch+json',
        'if-match': created.headers.get('etag')!,
      },
      body: '{"tag":"fern"}',
    });
    expect(updated.status).toBe(200);
    expect(updated.text).toBe('{"id":7,"name":"Fern","tag":"fern","version":2}');
    expect(updated.headers.get('access-control-allow-origin')).toBe(origin);
    expect(updated.headers.get('etag')).toBe('"2"');
    const exposed = updated.headers.get('access-control-expose-headers')!.split(',');
    expect(exposed).toEqual(expect.arrayContaining(['ETag', 'Idempotent-Replayed', 'Link', 'X-Request-Id']));
  });
});
