import { createLocalJWKSet, createRemoteJWKSet, errors, type JWTVerifyGetKey } from 'jose';

/** Bound on one discovery or JWKS request to an issuer. */
const FETCH_TIMEOUT_MS = 5_000;

/**
 * The signing keys of one issuer, for `jwtVerify`: its discovery document (fetched once, when it
 * first answers) names the JWKS, which jose's remote set caches (refetched after 10 minutes, or for
 * an unknown `kid` at most once per `cooldownMs`, so a key rotation needs no restart). When the
 * issuer cannot be reached, the keys last fetched keep verifying, a new `kid` is refused, and no
 * request goes to the issuer again for `cooldownMs`: neither a flood of made-up `kid`s nor an
 * outage makes the api call an issuer more than once per cooldown.
 */
export function issuerKeys(issuer: string, { cooldownMs }: { cooldownMs: number }): JWTVerifyGetKey {
  let remote: ReturnType<typeof createRemoteJWKSet> | undefined;
  let known: JWTVerifyGetKey | undefined;
  let failedAt = Number.NEGATIVE_INFINITY;

  const discover = async () => {
    const url = `${issuer.replace(/\/$/, '')}/.well-known/openid-configuration`;
    const response = await fetch(url, { redirect: 'error', signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
    if (response.status !== 200) throw new Error(`discovery answered ${response.status}`);
    const document = (await response.json()) as { issuer?: unknown; jwks_uri?: unknown };
    // OIDC Discovery §4.3: the document must name the issuer it was fetched for.
    if (document.issuer !== issuer) throw new Error('discovery names another issuer');
    if (typeof document.jwks_uri !== 'string' || !URL.canParse(document.jwks_uri)) {
      throw new Error('discovery names no jwks_uri');
    }
    return createRemoteJWKSet(new URL(document.jwks_uri), {
      cooldownDuration: cooldownMs,
      timeoutDuration: FETCH_TIMEOUT_MS,
    });
  };

  const fromKnown: JWTVerifyGetKey = (header, token) => {
    if (known === undefined) throw new errors.JWKSNoMatchingKey('the issuer’s keys could not be fetched');
    return known(header, token);
  };

  return async (header, token) => {
    if (performance.now() - failedAt < cooldownMs) return fromKnown(header, token);
    try {
      remote ??= await discover();
      return await remote(header, token);
    } catch (error) {
      if (!isOutage(error)) throw error;
      failedAt = performance.now();
      // A failed reload leaves jose's set as it was: the keys of the last fetch that worked.
      const jwks = remote?.jwks();
      known = jwks && createLocalJWKSet(jwks);
      return fromKnown(header, token);
    }
  };
}

/** Whether a key lookup failed because the issuer could not be asked (not because of the token). */
function isOutage(error: unknown): boolean {
  if (!(error instanceof errors.JOSEError)) return true;
  return (
    error instanceof errors.JWKSTimeout ||
    error instanceof errors.JWKSInvalid ||
    error.code === errors.JOSEError.code
  );
}
