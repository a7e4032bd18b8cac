import type { Middleware } from 'koa';
import { DEFAULT_SCOPE_MAP, type IssuerConfig } from '../config/identity.ts';
import { methodNotAllowed } from '../errors.ts';
import { type OwnPaths, ownPaths } from './own-paths.ts';

/** What `GET /auth/provider` answers: where the console and `plants login` sign in. */
export type ProviderAnswer = { issuer: string; clientId: string; audience: string; scopes: string[] };

/**
 * The identity provider people sign in with: the first configured issuer that names a `clientId`
 * (a public client). Its scopes are those its `scopeMap` (or the default) maps, with `openid` and
 * `offline_access` (refresh tokens). Unauthenticated: a client asks before it holds any token.
 */
export function signInProvider(issuers: readonly IssuerConfig[]): ProviderAnswer | undefined {
  const issuer = issuers.find((entry) => entry.clientId !== undefined);
  if (issuer === undefined) return undefined;
  return {
    issuer: issuer.issuer,
    clientId: issuer.clientId!,
    audience: issuer.audience,
    scopes: ['openid', 'offline_access', ...Object.keys(issuer.scopeMap ?? DEFAULT_SCOPE_MAP)],
  };
}

/** `GET /auth/provider`: `{provider}`, `null` when people sign in with a bearer token they paste. */
export function authProviderPaths(issuers: readonly IssuerConfig[]): OwnPaths {
  const body = JSON.stringify({ provider: signInProvider(issuers) ?? null });
  const serve: Middleware = async (ctx) => {
    ctx.state.route = ctx.path;
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') throw methodNotAllowed(ctx.method, ['GET', 'HEAD']);
    ctx.type = 'application/json';
    ctx.body = body;
  };
  return ownPaths((path) => path === '/auth/provider', serve);
}
