import { createHash, timingSafeEqual } from 'node:crypto';

/** What a token may do: `read` lists and reads plants; `write` creates and deletes them. */
export type Scope = 'read' | 'write';

/** Who made a request: the token's name (never its secret) and what it may do. */
export type Principal = { tokenName: string; scopes: readonly Scope[] };

export type AuthResult = { ok: true; principal: Principal } | { ok: false; reason: 'missing' | 'invalid' };

/** Checks an `Authorization` header value against the accepted bearer tokens. */
export type TokenVerifier = (authorization: string | undefined) => AuthResult;

// RFC 6750 §2.1: the scheme is case-insensitive; the token is a b64token.
const BEARER = /^bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;

/**
 * Builds a verifier for a fixed set of tokens. Tokens are compared as SHA-256 digests with
 * `timingSafeEqual`, against every accepted token, so the time taken says nothing about which
 * token (or how much of one) matched.
 */
export function createTokenVerifier(
  tokens: readonly { name: string; secret: string; scopes: readonly Scope[] }[],
): TokenVerifier {
  const accepted = tokens.map((token) => ({
    principal: { tokenName: token.name, scopes: token.scopes },
    digest: sha256(token.secret),
  }));
  return (authorization) => {
    if (authorization === undefined || authorization === '') return { ok: false, reason: 'missing' };
    const match = BEARER.exec(authorization);
    if (match === null) return { ok: false, reason: 'invalid' };
    const digest = sha256(match[1]!);
    let found: Principal | undefined;
    for (const token of accepted) {
      if (timingSafeEqual(digest, token.digest) && found === undefined) found = token.principal;
    }
    return found === undefined ? { ok: false, reason: 'invalid' } : { ok: true, principal: found };
  };
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}
