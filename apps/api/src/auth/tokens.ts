import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Scope } from './scopes.ts';

/** Who made a request: the token's name (never its secret) and what it may do. */
export type Principal = { tokenName: string; scopes: readonly Scope[] };

export type AuthResult = { ok: true; principal: Principal } | { ok: false; reason: 'missing' | 'invalid' };

// RFC 6750 §2.1: the scheme is case-insensitive; the token is a b64token.
const BEARER = /^bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;

/** Tokens the store issued (see `TokenStore`): their names, SHA-256 digests (hex) and scopes. */
export type IssuedToken = { name: string; digest: string; scopes: readonly Scope[] };

/**
 * Checks bearer tokens. `setIssued` swaps in the store's current issued tokens (revocations drop
 * out); they are accepted for `issuedMaxAgeMs` after it, then refused until the next `setIssued`.
 */
export type TokenVerifier = {
  verify(authorization: string | undefined): AuthResult;
  setIssued(tokens: readonly IssuedToken[]): void;
  /** Whether issued tokens are refused because the last `setIssued` is older than `issuedMaxAgeMs`. */
  issuedStale(): boolean;
  /** Where the token of this name stands now, by the same tokens `verify` accepts. */
  standing(name: string): Standing;
};

type Digest = { bytes: Buffer; hex: string };
/** Most Authorization values whose digest is kept (see `createTokenVerifier`). */
const DIGEST_CACHE_SIZE = 1000;

/**
 * The name a configured token (API_TOKENS, the generated one) takes: derived from its secret's
 * digest, so it names the same token whatever its position in API_TOKENS, and a replaced token
 * (another secret) never takes over what the one before it owned.
 */
export const configuredTokenName = (secret: string) => `api-token-${tokenDigest(secret).slice(0, 12)}`;

/**
 * The names configured tokens took before they were derived from digests: `api-token-N` by
 * position (N up to 11 digits; a derived name has 12) and `generated`. Nothing answers to them any
 * more: what was stored under them is disabled (migration 8), never handed to another token.
 */
export function isLegacyTokenName(name: string): boolean {
  return name === 'generated' || /^api-token-[1-9][0-9]{0,10}$/.test(name);
}

/** Whether a name belongs to configured tokens (or did), so no issued token may take it. */
export function isConfiguredTokenName(name: string): boolean {
  return isLegacyTokenName(name) || /^api-token-[0-9a-f]{12}$/.test(name);
}

/**
 * Where a token name stands on this instance (docs/principals.md): an active principal and its
 * scopes, inactive (revoked, removed from API_TOKENS, or never a token), or unknown: an issued name
 * while issued tokens are stale (reloads failing), when a revocation may be among what was missed.
 */
export type Standing =
  | { state: 'active'; scopes: readonly Scope[] }
  | { state: 'inactive' }
  | { state: 'unknown' };

/**
 * Builds a verifier for configured tokens (API_TOKENS, the generated one) and issued ones. Tokens
 * are compared as SHA-256 digests: configured ones with `timingSafeEqual` against each, so timing
 * says nothing about which matched or how much; issued ones by looking the digest up, which reveals
 * nothing an attacker can use since they cannot choose a digest. An issued token never takes a
 * configured token's name (it would share its limits, logs and metrics): such a token is ignored.
 * Issued tokens fail closed: past `issuedMaxAgeMs` without a `setIssued` (reloads failing), a
 * revoked one could still be in the set, so none is accepted.
 */
export function createTokenVerifier(
  configured: readonly { name: string; secret: string; scopes: readonly Scope[] }[],
  { issuedMaxAgeMs = Number.POSITIVE_INFINITY, now = () => performance.now() } = {},
): TokenVerifier {
  const accepted = configured.map((token) => ({
    principal: { tokenName: token.name, scopes: token.scopes },
    digest: sha256(token.secret),
  }));
  const configuredScopes = new Map(configured.map((token) => [token.name, token.scopes]));
  /** Issued tokens by digest (for `verify`) and by name (for `standing`). */
  let issued = new Map<string, Principal>();
  let issuedByName = new Map<string, Principal>();
  let issuedAt = now();
  const stale = () => now() - issuedAt > issuedMaxAgeMs;
  // The digests of Authorization values that matched a token once: clients send the same value on
  // every request, and hashing it was a visible part of each. Only the hashing is skipped; the
  // comparisons, revocations and the staleness bound apply as before. Bounded by emptying it.
  const digests = new Map<string, Digest>();
  return {
    verify(authorization) {
      if (authorization === undefined || authorization === '') return { ok: false, reason: 'missing' };
      let digest = digests.get(authorization);
      const cached = digest !== undefined;
      if (digest === undefined) {
        const match = BEARER.exec(authorization);
        if (match === null) return { ok: false, reason: 'invalid' };
        const bytes = sha256(match[1]!);
        digest = { bytes, hex: bytes.toString('hex') };
      }
      let found: Principal | undefined;
      for (const token of accepted) {
        if (timingSafeEqual(digest.bytes, token.digest) && found === undefined) found = token.principal;
      }
      if (found === undefined && issued.size > 0 && !stale()) found = issued.get(digest.hex);
      if (found === undefined) return { ok: false, reason: 'invalid' };
      if (!cached) {
        if (digests.size >= DIGEST_CACHE_SIZE) digests.clear();
        digests.set(authorization, digest);
      }
      return { ok: true, principal: found };
    },
    setIssued(tokens) {
      const kept = tokens.filter(
        (token) => !configuredScopes.has(token.name) && !isConfiguredTokenName(token.name),
      );
      issued = new Map(kept.map((token) => [token.digest, { tokenName: token.name, scopes: token.scopes }]));
      issuedByName = new Map([...issued.values()].map((principal) => [principal.tokenName, principal]));
      issuedAt = now();
    },
    issuedStale: stale,
    standing(name) {
      const scopes = configuredScopes.get(name);
      if (scopes !== undefined) return { state: 'active', scopes };
      // No issued token may hold a configured name: one not configured here is nobody's.
      if (isConfiguredTokenName(name)) return { state: 'inactive' };
      if (stale()) return { state: 'unknown' };
      const principal = issuedByName.get(name);
      return principal === undefined ? { state: 'inactive' } : { state: 'active', scopes: principal.scopes };
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
