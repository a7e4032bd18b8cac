import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { Middleware } from 'koa';
import { methodNotAllowed } from '../errors.ts';
import { type OwnPaths, ownPaths } from './own-paths.ts';

/**
 * The page may load only what this server serves: scripts and styles from files (no inline code,
 * no eval), images from files or `data:` (Swagger UI's icons), requests back to this server only.
 */
const PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** The files of swagger-ui-dist the page uses (maps for browser dev tools), by name and media type. */
const ASSET_TYPES = new Map([
  ['swagger-ui-bundle.js', 'text/javascript; charset=utf-8'],
  ['swagger-ui-bundle.js.map', 'application/json'],
  ['swagger-ui.css', 'text/css; charset=utf-8'],
  ['swagger-ui.css.map', 'application/json'],
  ['favicon-16x16.png', 'image/png'],
  ['favicon-32x32.png', 'image/png'],
]);

// URLs are relative to `/docs` so the page also works behind a path prefix.
const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Plant Store API reference</title>
<link rel="icon" type="image/png" sizes="32x32" href="docs/favicon-32x32.png">
<link rel="icon" type="image/png" sizes="16x16" href="docs/favicon-16x16.png">
<link rel="stylesheet" href="docs/swagger-ui.css">
</head>
<body>
<main id="swagger-ui"><noscript>This reference needs JavaScript. The API description is at <a href="openapi.json">openapi.json</a>.</noscript></main>
<script src="docs/swagger-ui-bundle.js"></script>
<script src="docs/init.js"></script>
</body>
</html>
`;

// "Try it" sends to the server that served the page (the only one the CSP allows), whatever
// address the document's `servers` names (behind a proxy, or `PORT=0`, it may not be reachable).
// Swagger UI pretty-prints JSON answers through JSON.parse, which rounds integers beyond 2^53:
// answers holding such long numbers are shown as the server sent them.
const INIT = `'use strict';
(async () => {
  const exactAnswers = () => ({
    wrapComponents: {
      responseBody: (Original, { React }) => (props) =>
        React.createElement(Original, /json/i.test(props.contentType || '') && /\\d{16}/.test(props.content || '')
          ? { ...props, contentType: 'text/plain' } : props),
    },
  });
  const root = document.getElementById('swagger-ui');
  try {
    const answer = await fetch('openapi.json', { headers: { accept: 'application/json' } });
    if (!answer.ok) throw new Error('GET openapi.json answered ' + answer.status);
    const spec = await answer.json();
    spec.servers = [{ url: new URL('.', location.href).href.replace(/\\/$/, ''), description: 'This server' }];
    SwaggerUIBundle({
      spec, domNode: root, plugins: [exactAnswers],
      deepLinking: true, validatorUrl: null, defaultModelsExpandDepth: 1,
    });
  } catch (error) {
    root.textContent = 'The API description could not be loaded: ' + error.message;
  }
})();
`;

type Asset = { body: Buffer | string; type: string; etag: string };

/**
 * `GET /docs`: an interactive reference (Swagger UI) for `GET /openapi.json`, where a user can
 * authorize with a bearer token and try every operation against this server. Every file comes
 * from the installed swagger-ui-dist package, found at start-up and read on first use; nothing
 * is fetched from elsewhere. Unauthenticated, like the document.
 *
 * Swagger UI rather than Scalar's standalone bundle (1.46.4): under this CSP Scalar's page injects
 * `<style>` elements (it would need `style-src 'unsafe-inline'`) and calls Scalar's own servers;
 * Swagger UI needs neither, nor `eval`.
 */
export function docsPaths(): OwnPaths {
  const dir = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
  const own = new Map([
    ['/docs', asset(PAGE, 'text/html; charset=utf-8')],
    ['/docs/init.js', asset(INIT, 'text/javascript; charset=utf-8')],
  ]);
  const loaded = new Map<string, Promise<Asset>>();
  const load = (name: string, type: string) => {
    let found = loaded.get(name);
    if (found === undefined) {
      found = readFile(join(dir, name)).then((body) => asset(body, type));
      found.catch(() => loaded.delete(name));
      loaded.set(name, found);
    }
    return found;
  };

  const assetName = (path: string) => (path.startsWith('/docs/') ? path.slice('/docs/'.length) : undefined);
  const owns = (path: string) => own.has(path) || path === '/docs/' || ASSET_TYPES.has(assetName(path) ?? '');
  const serve: Middleware = async (ctx) => {
    const name = assetName(ctx.path);
    const type = name === undefined ? undefined : ASSET_TYPES.get(name);
    const page = own.get(ctx.path);
    // A fixed, small set of paths: each is its own route in logs and metrics.
    ctx.state.route = ctx.path;
    if (ctx.path === '/docs/') return ctx.redirect('../docs');
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
      throw methodNotAllowed(ctx.method, ['GET', 'HEAD']);
    }
    const served = page ?? (await load(name!, type!));
    if (ctx.path === '/docs') {
      ctx.set('Content-Security-Policy', PAGE_CSP);
      ctx.set('Referrer-Policy', 'no-referrer');
    } else {
      // Static files: the browser may keep them but asks again (304 while unchanged).
      ctx.set('Cache-Control', 'no-cache');
    }
    ctx.status = 200;
    ctx.type = served.type;
    ctx.etag = served.etag;
    if (ctx.fresh) {
      ctx.status = 304;
      return;
    }
    ctx.body = served.body;
  };
  return ownPaths(owns, serve);
}

function asset(body: Buffer | string, type: string): Asset {
  return { body, type, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"` };
}
