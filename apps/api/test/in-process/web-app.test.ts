import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorBody, send } from '../support/http.ts';
import { type RunningApi, startInProcess } from '../support/in-process.ts';

const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
  "manifest-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
const PAGE =
  '<!doctype html><title>Console</title><script type="module" src="./assets/index-Ab12Cd34.js"></script>\n';
// Compressible, like a real bundle.
const SCRIPT = `${'console.log("a plant");\n'.repeat(400)}`;
const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0]);

/** A build of the console as Vite lays it out: the page, hashed assets, a file of public/. */
function writeBuild(dir: string): void {
  mkdirSync(join(dir, 'assets'), { recursive: true });
  writeFileSync(join(dir, 'index.html'), PAGE);
  writeFileSync(join(dir, 'assets', 'index-Ab12Cd34.js'), SCRIPT);
  writeFileSync(join(dir, 'assets', 'logo-Zz99Yy88.png'), PNG);
  writeFileSync(join(dir, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
}

/** A request sent exactly as written, so paths with `..` reach the server as they are. */
function rawGet(url: string, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}${path}`, { path }, (res) => {
      let body = '';
      res.on('data', (chunk) => {
        body += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

const dir = mkdtempSync(join(tmpdir(), 'plant-store-web-app-'));
const unbuilt = join(dir, 'not-built-yet');
let api: RunningApi;
let withoutBuild: RunningApi;

beforeAll(async () => {
  writeBuild(join(dir, 'build'));
  api = await startInProcess({ webAppDir: join(dir, 'build') });
  withoutBuild = await startInProcess({ webAppDir: unbuilt });
});

afterAll(async () => {
  await api?.stop();
  api?.cleanup();
  await withoutBuild?.stop();
  withoutBuild?.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

describe('GET /app/', () => {
  it('answers the page without a token, under a CSP that allows only its own files, revalidated on every load', async () => {
    const answer = await send(`${api.url}/app/`);
    expect(answer.status).toBe(200);
    expect(answer.text).toBe(PAGE);
    expect(answer.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(answer.headers.get('content-security-policy')).toBe(CSP);
    expect(answer.headers.get('cache-control')).toBe('no-cache');
    expect(answer.headers.get('referrer-policy')).toBe('no-referrer');
    expect(answer.headers.get('x-content-type-options')).toBe('nosniff');
    expect(answer.headers.get('vary')).toBe('Accept-Encoding');
    expect(answer.headers.get('etag')).toMatch(/^"[\w-]{27}"$/);
  });

  it('redirects /app to /app/, relatively (the page works behind a path prefix too)', async () => {
    const answer = await fetch(`${api.url}/app`, { redirect: 'manual' });
    expect(answer.status).toBe(302);
    expect(answer.headers.get('location')).toBe('app/');
  });

  it('answers HEAD like GET, without the body', async () => {
    const answer = await send(`${api.url}/app/`, { method: 'HEAD' });
    expect(answer.status).toBe(200);
    expect(answer.text).toBe('');
    expect(answer.headers.get('content-length')).toBe(String(Buffer.byteLength(PAGE)));
  });
});

describe('GET /app/{file}', () => {
  it('serves hashed assets for a year, immutable, gzipped for clients that accept it', async () => {
    const plain = await fetch(`${api.url}/app/assets/index-Ab12Cd34.js`, {
      headers: { 'accept-encoding': 'identity' },
    });
    expect(plain.status).toBe(200);
    expect(plain.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(plain.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(plain.headers.get('content-encoding')).toBeNull();
    expect(await plain.text()).toBe(SCRIPT);

    const gzipped = await rawAnswer(`${api.url}/app/assets/index-Ab12Cd34.js`, { 'accept-encoding': 'gzip' });
    expect(gzipped.headers['content-encoding']).toBe('gzip');
    expect(gzipped.headers.vary).toBe('Accept-Encoding');
    expect(gzipped.body.length).toBeLessThan(SCRIPT.length / 10);
    expect(gunzipSync(gzipped.body).toString()).toBe(SCRIPT);
    // Two representations, two strong tags.
    expect(gzipped.headers.etag).not.toBe(plain.headers.get('etag'));
  });

  it('answers 304 to a revalidation of an unchanged file', async () => {
    const first = await send(`${api.url}/app/favicon.svg`);
    expect(first.headers.get('content-type')).toBe('image/svg+xml');
    expect(first.headers.get('cache-control')).toBe('no-cache');
    const again = await send(`${api.url}/app/favicon.svg`, {
      headers: { 'if-none-match': first.headers.get('etag')!, 'cache-control': 'max-age=0' },
    });
    expect({ status: again.status, text: again.text }).toEqual({ status: 304, text: '' });
  });

  it('serves binary files as they are, with their media type', async () => {
    const answer = await fetch(`${api.url}/app/assets/logo-Zz99Yy88.png`, {
      headers: { 'accept-encoding': 'gzip' },
    });
    expect(answer.headers.get('content-type')).toBe('image/png');
    expect(answer.headers.get('content-encoding')).toBeNull();
    expect(Buffer.from(await answer.arrayBuffer())).toEqual(PNG);
  });

  it('answers 404 with an Error body for any path that is not a file of the build', async () => {
    for (const path of [
      '/app/nope.js',
      '/app/assets/',
      '/app/assets',
      '/app/assets/../index.html',
      '/app/../package.json',
      '/app/%2e%2e/%2e%2e/package.json',
      '/app/assets/..%2f..%2fpackage.json',
      '/app//etc/passwd',
    ]) {
      const answer = await rawGet(api.url, path);
      expect({ path, ...answer }).toEqual({
        path,
        status: 404,
        body: errorBody(404, 'The console has no file at this path.'),
      });
    }
  });

  it('answers 405 with Allow for another method', async () => {
    const answer = await send(`${api.url}/app/`, { method: 'POST', body: 'x' });
    expect(answer.status).toBe(405);
    expect(answer.headers.get('allow')).toBe('GET, HEAD');
    expect(answer.text).toBe(errorBody(405, 'POST is not allowed on this path; allowed: GET, HEAD.'));
  });
});

describe('/app/ before the console is built', () => {
  it('says how to build it, then serves it once it exists, without a restart', async () => {
    const before = await send(`${withoutBuild.url}/app/`);
    expect(before.status).toBe(404);
    expect(before.text).toBe(errorBody(404, 'The console is not built into this server: run `pnpm build`.'));
    writeBuild(unbuilt);
    const after = await send(`${withoutBuild.url}/app/`);
    expect(after.status).toBe(200);
    expect(after.text).toBe(PAGE);
  });
});

/** A GET whose body is read as bytes, not decoded (fetch would gunzip it). */
function rawAnswer(
  url: string,
  headers: Record<string, string>,
): Promise<{ headers: Record<string, string | string[] | undefined>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}
