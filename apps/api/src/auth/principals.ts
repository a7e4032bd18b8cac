import type { JwtVerifier } from './jwt-verifier.ts';
import { parseJwtPrincipalName } from './jwt-names.ts';
import { isConfiguredTokenName, type Standing, type TokenVerifier } from './tokens.ts';
import type { TokenStore } from '../store/contract.ts';

/**
 * The principal model of docs/principals.md, for what outlives a request: open event streams and
 * registered webhook endpoints. Both ask the verifiers, so they see the principals requests see: a
 * token's name, or a JWT principal's (issuer#subject, see jwt-names.ts).
 */

/** Whether an open event stream of this principal may go on: it is active with `read`. */
export function streamMayContinue(verifier: TokenVerifier, name: string, jwt?: JwtVerifier): boolean {
  const standing =
    parseJwtPrincipalName(name) === undefined
      ? verifier.standing(name)
      : (jwt?.streamStanding(name) ?? { state: 'inactive' });
  return standing.state === 'active' && standing.scopes.includes('read');
}

/**
 * Where an endpoint's owner stands, for the delivery worker. An issued name the verifier does not
 * hold is confirmed with the store before it counts as inactive: it may have been issued since this
 * instance's last reload (and its endpoint registered on an instance that reloaded sooner), and
 * what the worker does to an inactive owner's endpoint (disable it) lasts. A JWT principal stands as
 * long as its issuer is configured and it is not blocked.
 */
export function ownerLookup(
  verifier: TokenVerifier,
  tokens: TokenStore,
  jwt?: JwtVerifier,
): (owner: string) => Promise<Standing> {
  return async (owner) => {
    if (parseJwtPrincipalName(owner) !== undefined) return jwt?.ownerStanding(owner) ?? { state: 'inactive' };
    const standing = verifier.standing(owner);
    if (standing.state !== 'inactive' || isConfiguredTokenName(owner)) return standing;
    const issued = (await tokens.active()).find((token) => token.name === owner);
    return issued === undefined ? standing : { state: 'active', scopes: issued.scopes };
  };
}
