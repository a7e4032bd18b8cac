import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningApi, startInProcess } from '../support/in-process.ts';
import { send } from '../support/http.ts';

let api: RunningApi;
beforeAll(async () => {
  api = await startInProcess();
});
afterAll(async () => {
  await api?.stop();
  api?.cleanup();
});

describe('GET /docs', () => {
  it('answers the page without a token, under a CSP that allows only its own files', async () => {
    const answer = await send(`${api.url}/docs`);
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(answer.headers.get('content-security-policy')).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    );
    expect(answer.text).not.toMatch(/<script>|<style|\sstyle=|\son\w+=|https?:/);
  });

  it('serves every file the page references from the api, with its media type', async () => {
    const page = (await send(`${api.url}/docs`)).text;
    const referenced = [...page.matchAll(/(?:src|href)="([^"]+)"/g)].map((match) => match[1]!);
    expect(referenced.sort()).toEqual([
      'docs/favicon-16x16.png',
      'docs/favicon-32x32.png',
      'docs/init.js',
      'docs/swagger-ui-bundle.js',
      'docs/swagger-ui.css',
      'openapi.json',
    ]);
    const types = await Promise.all(
      referenced.map(async (path) => {
        const answer = await send(`${api.url}/${path}`);
        return [path, answer.status, answer.headers.get('content-type')];
      }),
    );
    expect(types).toEqual([
      ['docs/favicon-16x16.png', 200, 'image/png'],
      ['docs/favicon-32x32.png', 200, 'image/png'],
      ['docs/init.js', 200, 'text/javascript; charset=utf-8'],
      ['docs/swagger-ui-bundle.js', 200, 'text/javascript; charset=utf-8'],
      ['docs/swagger-ui.css', 200, 'text/css; charset=utf-8'],
      ['openapi.json', 200, 'application/json; charset=utf-8'],
    ]);
  });

  it('answers 304 to a revalidation of an unchanged file', async () => {
    const first = await send(`${api.url}/docs/swagger-ui.css`);
    expect(first.headers.get('cache-control')).toBe('no-cache');
    const etag = first.headers.get('etag')!;
    // What a browser sends to revalidate (fetch adds `Cache-Control: no-cache`, a forced reload, unless told).
    const headers = { 'if-none-match': etag, 'cache-control': 'max-age=0' };
    const again = await send(`${api.url}/docs/swagger-ui.css`, { headers });
    expect({ status: again.status, length: again.text.length }).toEqual({ status: 304, length: 0 });
  });

  it('serves only the listed files, and only to GET and HEAD', async () => {
    expect((await send(`${api.url}/docs/package.json`)).status).toBe(404);
    expect((await send(`${api.url}/docs/..%2Fpackage.json`)).status).toBe(404);
    expect((await send(`${api.url}/docs/constructor`)).status).toBe(404);
    expect((await send(`${api.url}/docs`, { method: 'HEAD' })).status).toBe(200);
    const post = await send(`${api.url}/docs`, { method: 'POST' });
    expect({ status: post.status, allow: post.headers.get('allow'), json: post.json }).toEqual({
      status: 405,
      allow: 'GET, HEAD',
      json: { error: 405, message: 'POST is not allowed on this path; allowed: GET, HEAD.' },
    });
  });
});
