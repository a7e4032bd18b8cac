import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** What a token may do: `read` lists and reads plants; `write` creates and deletes them. */
export type Scope = 'read' | 'write';

/** Who made a request: the token's name (never its secret) and what it may do. */
export type Principal = { tokenName: string; scopes: readonly Scope[] };

export type AuthResult = { ok: true; principal: Principal } | { ok: false; reason: 'missing' | 'invalid' };

// RFC 6750 §2.1: the scheme is case-insensitive; the token is a b64token.
const BEARER = /^bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;

/** Tokens the store issued (see `TokenStore`): their names, SHA-256 digests (hex) and scopes. */
export type IssuedToken = { name: string; digest: string; scopes: readonly Scope[] };

/** Checks bearer tokens; `setIssued` swaps in the store's current tokens (revocations drop out). */
export type TokenVerifier = {
  verify(authorization: string | undefined): AuthResult;
  setIssued(tokens: readonly IssuedToken[]): void;
};

/**
 * Builds a verifier for configured tokens (API_TOKENS, the generated one) and issued ones. Tokens
 * are compared as SHA-256 digests: configured ones with `timingSafeEqual` against each, so timing
 * says nothing about which matched or how much; issued ones by looking the digest up, which reveals
 * nothing an attacker can use since they cannot choose a digest.
 */
export function createTokenVerifier(
  configured: readonly { name: string; secret: string; scopes: readonly Scope[] }[],
): TokenVerifier {
  const accepted = configured.map((token) => ({
    principal: { tokenName: token.name, scopes: token.scopes },
    digest: sha256(token.secret),
  }));
  let issued = new Map<string, Principal>();
  return {
    verify(authorization) {
      if (authorization === undefined || authorization === '') return { ok: false, reason: 'missing' };
      const match = BEARER.exec(authorization);
      if (match === null) return { ok: false, reason: 'invalid' };
      const digest = sha256(match[1]!);
      let found: Principal | undefined;
      for (const token of accepted) {
        if (timingSafeEqual(digest, token.digest) && found === undefined) found = token.principal;
      }
      found ??= issued.size > 0 ? issued.get(digest.toString('hex')) : undefined;
      return found === undefined ? { ok: false, reason: 'invalid' } : { ok: true, principal: found };
    },
    setIssued(tokens) {
      issued = new Map(
        tokens.map((token) => [token.digest, { tokenName: token.name, scopes: token.scopes }]),
      );
    },
  };
}

/** A new bearer token: 32 random bytes, prefixed so scanners can spot a leaked one. */
export function newTokenSecret(): string {
  return `pst_${randomBytes(32).toString('base64url')}`;
}

/** The SHA-256 digest (hex) under which a token is stored. */
export function tokenDigest(secret: string): string {
  return sha256(secret).toString('hex');
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}
