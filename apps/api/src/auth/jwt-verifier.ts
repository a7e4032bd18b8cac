import { decodeJwt, type JWTPayload, type JWTVerifyGetKey, jwtVerify } from 'jose';
import { DEFAULT_SCOPE_MAP, type IdentityConfig, type IssuerConfig } from '../config/identity.ts';
import { issuerKeys } from './jwt-keys.ts';
import { jwtPrincipalName, parseJwtPrincipalName } from './jwt-names.ts';
import { ALL_SCOPES, type Scope } from './scopes.ts';
import type { AuthResult, Principal, Standing } from './tokens.ts';

/** Signature algorithms accepted: asymmetric only, so no key the api holds can sign (never `none`, never HMAC). */
export const JWT_ALGORITHMS = ['RS256', 'ES256', 'EdDSA'];
/** Clock skew allowed on `exp` and `nbf`, in seconds. */
export const CLOCK_TOLERANCE_S = 60;
/** Verified tokens kept (least recently used dropped first), so a token's signature is checked once. */
const VERIFIED_CACHE_SIZE = 10_000;
/** Header `typ`s of access tokens: RFC 9068's, and the generic one most providers set. */
const ACCESS_TOKEN_TYPES = new Set(['jwt', 'at+jwt', 'application/at+jwt']);

const INVALID: AuthResult = { ok: false, reason: 'invalid' };

type Verified = { principal: Principal; untilMs: number };

/**
 * Checks JWT access tokens of the configured issuers (docs/identity.md). A token verified once is
 * kept until it expires (with the clock tolerance), so later requests with it cost a lookup: its
 * principal's block is still checked on each. Blocks come from the store through `setBlocked`
 * (the token refresh), and fail closed as issued tokens do: past `blockedMaxAgeMs` without one,
 * every JWT is refused.
 */
export type JwtVerifier = {
  /** The principal of `token` (a compact JWS); synchronous when it was verified before. */
  verify(token: string): AuthResult | Promise<AuthResult>;
  setBlocked(names: Iterable<string>): void;
  /** For open streams: active while unblocked and a token of it seen here has not expired. */
  streamStanding(name: string): Standing;
  /** For endpoint owners: active while its issuer is configured and it is not blocked. */
  ownerStanding(name: string): Standing;
};

export function createJwtVerifier(
  identity: IdentityConfig,
  { blockedMaxAgeMs = Number.POSITIVE_INFINITY, now = () => Date.now() } = {},
): JwtVerifier {
  const issuers = new Map(
    identity.issuers.map((issuer) => [
      issuer.issuer,
      { config: issuer, keys: issuerKeys(issuer.issuer, { cooldownMs: identity.jwksCooldownMs }) },
    ]),
  );
  const verified = new Map<string, Verified>();
  /** Per principal, until when a token of it verified here is valid, and that token's scopes. */
  const seen = new Map<string, { untilMs: number; scopes: readonly Scope[] }>();
  let blocked = new Set<string>();
  let blockedAt = now();
  const stale = () => now() - blockedAt > blockedMaxAgeMs;
  const admit = (principal: Principal): AuthResult =>
    blocked.has(principal.tokenName) || stale() ? INVALID : { ok: true, principal };

  const check = async (token: string): Promise<AuthResult> => {
    let issuer: { config: IssuerConfig; keys: JWTVerifyGetKey } | undefined;
    try {
      const iss = decodeJwt(token).iss;
      issuer = iss === undefined ? undefined : issuers.get(iss);
    } catch {
      return INVALID;
    }
    if (issuer === undefined) return INVALID;
    const { config, keys } = issuer;
    let payload: JWTPayload;
    try {
      const result = await jwtVerify(token, keys, {
        issuer: config.issuer,
        audience: config.audience,
        algorithms: JWT_ALGORITHMS,
        clockTolerance: CLOCK_TOLERANCE_S,
        requiredClaims: ['exp'],
        ...(config.requireAtJwt && { typ: 'at+jwt' }),
      });
      const typ = result.protectedHeader.typ?.toLowerCase();
      if (typ !== undefined && !ACCESS_TOKEN_TYPES.has(typ)) return INVALID;
      payload = result.payload;
    } catch {
      return INVALID;
    }
    const subject = [payload.sub, payload.client_id, payload.azp].find(
      (claim): claim is string => typeof claim === 'string' && claim.length > 0,
    );
    if (subject === undefined) return INVALID;
    const principal = {
      tokenName: jwtPrincipalName(config.issuer, subject),
      scopes: mappedScopes(payload, config.scopeMap ?? DEFAULT_SCOPE_MAP),
    };
    const untilMs = (payload.exp! + CLOCK_TOLERANCE_S) * 1000;
    if (verified.size >= VERIFIED_CACHE_SIZE) verified.delete(verified.keys().next().value!);
    verified.set(token, { principal, untilMs });
    const before = seen.get(principal.tokenName);
    if (before === undefined || before.untilMs < untilMs)
      seen.set(principal.tokenName, { untilMs, scopes: principal.scopes });
    return admit(principal);
  };

  return {
    verify(token) {
      const hit = verified.get(token);
      if (hit === undefined) return check(token);
      if (now() >= hit.untilMs) {
        verified.delete(token);
        return INVALID;
      }
      return admit(hit.principal);
    },
    setBlocked(names) {
      blocked = new Set(names);
      blockedAt = now();
      const at = now();
      for (const [name, entry] of seen) if (entry.untilMs <= at) seen.delete(name);
      for (const [token, entry] of verified) if (entry.untilMs <= at) verified.delete(token);
    },
    streamStanding(name) {
      const owner = this.ownerStanding(name);
      if (owner.state !== 'active') return owner;
      const entry = seen.get(name);
      return entry === undefined || entry.untilMs <= now()
        ? { state: 'inactive' }
        : { state: 'active', scopes: entry.scopes };
    },
    ownerStanding(name) {
      const parsed = parseJwtPrincipalName(name);
      if (parsed === undefined || !issuers.has(parsed.issuer) || blocked.has(name))
        return { state: 'inactive' };
      if (stale()) return { state: 'unknown' };
      // What the endpoint's registration required (`webhooks`) and what delivering needs (`read`).
      return { state: 'active', scopes: ['read', 'webhooks'] };
    },
  };
}

/** Our scopes from the token's `scope` (space-separated) or `scp` (a list, or space-separated). */
export function mappedScopes(payload: JWTPayload, map: Readonly<Record<string, readonly Scope[]>>): Scope[] {
  const claim = payload.scope ?? payload.scp;
  const names = Array.isArray(claim) ? claim : typeof claim === 'string' ? claim.split(' ') : [];
  const scopes = new Set<Scope>();
  for (const name of names) {
    if (typeof name === 'string' && Object.hasOwn(map, name))
      for (const scope of map[name]!) scopes.add(scope);
  }
  return ALL_SCOPES.filter((scope) => scopes.has(scope));
}
