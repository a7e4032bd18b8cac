import * as oauth from 'oauth4webapi';

/**
 * Signing in with the identity provider the api names at `GET /auth/provider` (docs/identity.md):
 * the authorization code flow with PKCE (S256), `oauth4webapi` doing the protocol. The flow's
 * verifier and state, and then the tokens, are kept in `sessionStorage` (this tab only), never
 * `localStorage` or a cookie.
 */

export type Provider = { issuer: string; clientId: string; audience: string; scopes: string[] };
export type ProviderTokens = {
  provider: Provider;
  accessToken: string;
  refreshToken?: string;
  idToken?: string;
  /** Epoch ms. */
  expiresAt: number;
};

const FLOW_KEY = 'plant-store:sign-in-flow';
const TOKENS_KEY = 'plant-store:provider-tokens';
/** Renew this long before the access token expires. */
export const RENEW_BEFORE_MS = 60_000;

/** Where the provider sends the browser back: the console's own page, without query or fragment. */
const redirectUri = () => new URL('./', document.baseURI).href;

/** Loopback http is allowed (a provider on this machine), as the api allows it. */
const options = (issuer: string) => {
  const { protocol, hostname } = new URL(issuer);
  return {
    [oauth.allowInsecureRequests]:
      protocol === 'http:' && ['127.0.0.1', '[::1]', 'localhost'].includes(hostname),
  };
};

const stored = <T>(key: string): T | undefined => {
  try {
    const text = sessionStorage.getItem(key);
    return text === null ? undefined : (JSON.parse(text) as T);
  } catch {
    return undefined;
  }
};
const store = (key: string, value: unknown) => {
  try {
    if (value === undefined) sessionStorage.removeItem(key);
    else sessionStorage.setItem(key, JSON.stringify(value));
  } catch {
    // Storage refused: the tokens live in memory only, until a reload.
  }
};

export const savedProviderTokens = () => stored<ProviderTokens>(TOKENS_KEY);
export const forgetProviderTokens = () => store(TOKENS_KEY, undefined);

/** The provider the api names, `null` when it names none (sign in with a pasted token). */
export async function fetchProvider(): Promise<Provider | null> {
  const response = await fetch(new URL('../auth/provider', document.baseURI));
  if (!response.ok) return null;
  return ((await response.json()) as { provider: Provider | null }).provider;
}

async function discover(issuer: string): Promise<oauth.AuthorizationServer> {
  const url = new URL(issuer);
  return oauth.processDiscoveryResponse(url, await oauth.discoveryRequest(url, options(issuer)));
}

/** Leaves for the provider's sign-in page; it comes back to this page with a code. */
export async function startSignIn(provider: Provider): Promise<void> {
  const as = await discover(provider.issuer);
  const verifier = oauth.generateRandomCodeVerifier();
  const state = oauth.generateRandomState();
  store(FLOW_KEY, { provider, verifier, state });
  const url = new URL(as.authorization_endpoint!);
  url.search = new URLSearchParams({
    client_id: provider.clientId,
    redirect_uri: redirectUri(),
    response_type: 'code',
    scope: provider.scopes.join(' '),
    resource: provider.audience,
    state,
    code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
  }).toString();
  location.assign(url.href);
}

/**
 * When this page is the provider's answer (a `code` and the `state` of this tab's flow): the code
 * exchanged for tokens, which are kept, and the URL cleaned. `undefined` when it is not.
 */
export async function finishSignIn(): Promise<ProviderTokens | undefined> {
  const here = new URL(location.href);
  const flow = stored<{ provider: Provider; verifier: string; state: string }>(FLOW_KEY);
  if (!here.searchParams.has('state') || flow === undefined) return undefined;
  store(FLOW_KEY, undefined);
  history.replaceState(null, '', redirectUri());
  const { provider } = flow;
  const as = await discover(provider.issuer);
  const client = { client_id: provider.clientId };
  const params = oauth.validateAuthResponse(as, client, here, flow.state);
  const response = await oauth.authorizationCodeGrantRequest(
    as,
    client,
    oauth.None(),
    params,
    redirectUri(),
    flow.verifier,
    { ...options(provider.issuer), additionalParameters: { resource: provider.audience } },
  );
  return keep(provider, await oauth.processAuthorizationCodeResponse(as, client, response));
}

/** New tokens from the refresh token, before the access token expires. */
export async function renewTokens(tokens: ProviderTokens): Promise<ProviderTokens> {
  const { provider } = tokens;
  if (tokens.refreshToken === undefined) throw new Error('no refresh token: sign in again');
  const as = await discover(provider.issuer);
  const client = { client_id: provider.clientId };
  const response = await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refreshToken, {
    ...options(provider.issuer),
    additionalParameters: { resource: provider.audience },
  });
  const renewed = await oauth.processRefreshTokenResponse(as, client, response);
  return keep(provider, {
    ...renewed,
    refresh_token: renewed.refresh_token ?? tokens.refreshToken,
    id_token: renewed.id_token ?? tokens.idToken,
  });
}

function keep(provider: Provider, response: oauth.TokenEndpointResponse): ProviderTokens {
  const tokens: ProviderTokens = {
    provider,
    accessToken: response.access_token,
    ...(response.refresh_token !== undefined && { refreshToken: response.refresh_token }),
    ...(response.id_token !== undefined && { idToken: response.id_token }),
    expiresAt: Date.now() + (response.expires_in ?? 300) * 1000,
  };
  store(TOKENS_KEY, tokens);
  return tokens;
}

/** Ends the provider's session too, where it offers `end_session_endpoint` (leaving this page). */
export async function endProviderSession(tokens: ProviderTokens): Promise<boolean> {
  forgetProviderTokens();
  const as = await discover(tokens.provider.issuer);
  if (as.end_session_endpoint === undefined) return false;
  const url = new URL(as.end_session_endpoint);
  url.search = new URLSearchParams({
    client_id: tokens.provider.clientId,
    post_logout_redirect_uri: redirectUri(),
    ...(tokens.idToken !== undefined && { id_token_hint: tokens.idToken }),
  }).toString();
  location.assign(url.href);
  return true;
}
