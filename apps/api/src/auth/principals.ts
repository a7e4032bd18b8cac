import { isConfiguredTokenName, type Standing, type TokenVerifier } from './tokens.ts';
import type { TokenStore } from '../store/contract.ts';

/**
 * The principal model of docs/principals.md, for what outlives a request: open event streams and
 * registered webhook endpoints. Both ask the verifier, so they see the tokens requests see.
 */

/** Whether an open event stream of this token may go on: its token is active with `read`. */
export function streamMayContinue(verifier: TokenVerifier, tokenName: string): boolean {
  const standing = verifier.standing(tokenName);
  return standing.state === 'active' && standing.scopes.includes('read');
}

/**
 * Where an endpoint's owner stands, for the delivery worker. An issued name the verifier does not
 * hold is confirmed with the store before it counts as inactive: it may have been issued since this
 * instance's last reload (and its endpoint registered on an instance that reloaded sooner), and
 * what the worker does to an inactive owner's endpoint (disable it) lasts.
 */
export function ownerLookup(
  verifier: TokenVerifier,
  tokens: TokenStore,
): (owner: string) => Promise<Standing> {
  return async (owner) => {
    const standing = verifier.standing(owner);
    if (standing.state !== 'inactive' || isConfiguredTokenName(owner)) return standing;
    const issued = (await tokens.active()).find((token) => token.name === owner);
    return issued === undefined ? standing : { state: 'active', scopes: issued.scopes };
  };
}
