import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { extname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import type { Middleware } from 'koa';
import { RequestError, methodNotAllowed } from '../errors.ts';
import { type OwnPaths, ownPaths } from './own-paths.ts';

/**
 * Where the plant console's built files are: `app/` beside the api's bundle (`dist/app`), where
 * build.mjs copies apps/web's build. Run from source, there is none (`pnpm dev` serves the console
 * with Vite instead).
 */
export const WEB_APP_DIR = fileURLToPath(new URL('app/', import.meta.url));

/**
 * The console may load only its own files and talk only to this server: no inline script or
 * style, no eval, no frames, no form posted anywhere.
 */
export const WEB_APP_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** Vite names every file under `assets/` by a hash of its content: a new build, a new name. */
const HASHED = 'assets/';
const IMMUTABLE = 'public, max-age=31536000, immutable';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.map': 'application/json',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.txt': 'text/plain; charset=utf-8',
  '.woff2': 'font/woff2',
};
/** Worth compressing: text. */
const TEXT = /^(text\/|application\/json|image\/svg)/;

type File = { body: Buffer; type: string; hash: string; gzip: () => Buffer | undefined };

/**
 * `/app/`: the plant console (apps/web), same origin as the api so it needs no CORS. The build's
 * file names are listed on first use and each file read (and gzipped, if text and smaller for it)
 * on its own first request, then kept in memory with its ETag: a path is looked up among the
 * names, never joined onto the filesystem. Hashed assets are cached for a year, everything else
 * (`index.html`) revalidated on every load. Unauthenticated, like `/docs`: the console asks for a
 * token itself and sends it only to /trpc.
 */
export function webAppPaths(dir: string = WEB_APP_DIR, signInOrigin?: string): OwnPaths {
  // Signing in with an identity provider: the console calls its discovery, token and revocation
  // endpoints, and nothing else is opened (its pages are navigated to, not framed or posted to).
  const csp =
    signInOrigin === undefined
      ? WEB_APP_CSP
      : WEB_APP_CSP.replace("connect-src 'self'", `connect-src 'self' ${signInOrigin}`);
  let listed: Promise<Set<string>> | undefined;
  const list = () => {
    if (listed === undefined) {
      listed = listFiles(dir);
      // Not built yet: look again on the next request rather than remembering the failure.
      listed.catch(() => {
        listed = undefined;
      });
    }
    return listed;
  };
  const loaded = new Map<string, Promise<File>>();
  const load = (name: string) => {
    let file = loaded.get(name);
    if (file === undefined) {
      file = readFile(join(dir, name)).then((body) => toFile(name, body));
      file.catch(() => loaded.delete(name));
      loaded.set(name, file);
    }
    return file;
  };

  const serve: Middleware = async (ctx) => {
    if (ctx.path === '/app') {
      ctx.state.route = '/app';
      // Relative, so the console's relative URLs also work behind a path prefix.
      return ctx.redirect('app/');
    }
    const name = ctx.path === '/app/' ? 'index.html' : ctx.path.slice('/app/'.length);
    // Two routes in logs and metrics, whatever paths clients ask for.
    ctx.state.route = name === 'index.html' ? '/app/' : '/app/{file}';
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') throw methodNotAllowed(ctx.method, ['GET', 'HEAD']);
    const names = await list().catch(() => {
      throw new RequestError('not_found', 'The console is not built into this server: run `pnpm build`.');
    });
    if (!names.has(name)) throw new RequestError('not_found', 'The console has no file at this path.');
    const file = await load(name);

    ctx.set('Content-Security-Policy', csp);
    ctx.set('Referrer-Policy', 'no-referrer');
    ctx.set('Cache-Control', name.startsWith(HASHED) ? IMMUTABLE : 'no-cache');
    ctx.vary('Accept-Encoding');
    const gzip = ctx.acceptsEncodings('gzip', 'identity') === 'gzip' ? file.gzip() : undefined;
    ctx.status = 200;
    ctx.type = file.type;
    // Each encoding is a representation of its own, with its own strong tag.
    ctx.etag = gzip ? `"${file.hash}-gz"` : `"${file.hash}"`;
    if (ctx.fresh) {
      ctx.status = 304;
      return;
    }
    if (gzip) ctx.set('Content-Encoding', 'gzip');
    ctx.body = gzip ?? file.body;
  };
  return ownPaths((path) => path === '/app' || path.startsWith('/app/'), serve);
}

/** The names of every regular file under `dir`, relative to it (`assets/index-…js`). */
async function listFiles(dir: string): Promise<Set<string>> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  const names = new Set(
    entries
      .filter((entry) => entry.isFile())
      .map((entry) => relative(dir, join(entry.parentPath, entry.name)).split(sep).join('/')),
  );
  if (!names.has('index.html')) throw new Error(`${dir} has no index.html`);
  return names;
}

function toFile(name: string, body: Buffer): File {
  const type = TYPES[extname(name)] ?? 'application/octet-stream';
  let gzipped: Buffer | null | undefined;
  return {
    body,
    type,
    hash: createHash('sha256').update(body).digest('base64url').slice(0, 27),
    // Compressed on the first request that accepts it (a source map only if someone asks for it).
    gzip() {
      if (gzipped === undefined) {
        const compressed = TEXT.test(type) ? gzipSync(body) : undefined;
        gzipped = compressed !== undefined && compressed.length < body.length ? compressed : null;
      }
      return gzipped ?? undefined;
    },
  };
}
