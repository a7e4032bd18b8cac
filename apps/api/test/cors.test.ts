import { afterAll, describe, expect, it } from 'vitest';
import { postPlant, send, TOKEN } from './support/http.ts';
import { type InProcessApi, startInProcess } from './support/in-process.ts';

const started: InProcessApi[] = [];
afterAll(async () => {
  for (const api of started) await api.close();
});
const preflight = (api: InProcessApi, origin: string) =>
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
    const api = await startInProcess();
    started.push(api);
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
    const api = await startInProcess({ corsOrigins: ['https://app.example'] });
    started.push(api);
    const allowed = await preflight(api, 'https://app.example');
    expect(allowed.status).toBe(204);
    expect(allowed.headers.get('access-control-allow-origin')).toBe('https://app.example');
    expect(allowed.headers.get('access-control-allow-headers')).toContain('Authorization');
    expect(allowed.headers.get('access-control-allow-methods')).toBe('GET,POST,DELETE');
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
});
