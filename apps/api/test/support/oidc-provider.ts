import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import Provider from 'oidc-provider';

/**
 * A real OpenID provider (`oidc-provider`, the certified implementation) on loopback, with its own
 * login and consent pages (its development interactions: any login and password sign in), for the
 * api's identity tests. It issues JWT access tokens (RFC 9068, ES256) for the resource `audience`
 * with the `plants:*` scopes, to three clients: `partner` (client credentials, secret
 * `partner-secret`), `plant-console` (public, authorization code + PKCE) and `plants-cli` (public,
 * device flow), both public ones with refresh tokens.
 */
export type TestProvider = {
  issuer: string;
  port: number;
  /** The signing keys, private, newest first (the first signs). */
  keys: JWK[];
  /** Requests to its JWKS endpoint since it started. */
  jwksFetches(): number;
  /** A client-credentials access token of `partner`. */
  clientCredentials(options?: { scope?: string; resource?: string }): Promise<string>;
  close(): Promise<void>;
};

export const AUDIENCE = 'https://plants.example/api';
export const OTHER_AUDIENCE = 'https://other.example/api';
export const SCOPES = 'plants:read plants:write plants:webhooks';

/** A new ES256 signing key, private, with its `kid`. */
export async function signingKey(kid: string): Promise<JWK> {
  const { privateKey } = await generateKeyPair('ES256', { extractable: true });
  return { ...(await exportJWK(privateKey)), kid, alg: 'ES256', use: 'sig' };
}

export async function startProvider(
  options: {
    port?: number;
    keys?: JWK[];
    accessTokenTtlSeconds?: number;
    redirectUris?: string[];
    postLogoutRedirectUris?: string[];
  } = {},
): Promise<TestProvider> {
  const keys = options.keys ?? [await signingKey('key-1')];
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const issuer = `http://127.0.0.1:${port}`;
  const provider = new Provider(issuer, {
    jwks: { keys },
    cookies: { keys: ['plant-store-test-cookie-key'] },
    clientDefaults: { id_token_signed_response_alg: 'ES256' },
    clients: [
      {
        client_id: 'partner',
        client_secret: 'partner-secret',
        grant_types: ['client_credentials'],
        response_types: [],
        redirect_uris: [],
      },
      {
        client_id: 'plant-console',
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        redirect_uris: options.redirectUris ?? ['http://127.0.0.1/app/'],
        post_logout_redirect_uris: options.postLogoutRedirectUris ?? [],
      },
      {
        client_id: 'plants-cli',
        token_endpoint_auth_method: 'none',
        grant_types: ['urn:ietf:params:oauth:grant-type:device_code', 'refresh_token'],
        response_types: [],
        redirect_uris: [],
      },
    ],
    scopes: ['openid', 'offline_access'],
    pkce: { required: () => true },
    features: {
      devInteractions: { enabled: true },
      clientCredentials: { enabled: true },
      deviceFlow: { enabled: true },
      rpInitiatedLogout: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: async () => AUDIENCE,
        useGrantedResource: async () => true,
        getResourceServerInfo: async (_ctx, resource) => ({
          scope: SCOPES,
          audience: resource,
          accessTokenFormat: 'jwt',
          accessTokenTTL: options.accessTokenTtlSeconds ?? 300,
          jwt: { sign: { alg: 'ES256' } },
        }),
      },
    },
    // Every client may refresh: the console and the CLI ask for offline_access.
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
  });
  let fetches = 0;
  provider.use(async (ctx, next) => {
    if (ctx.path === '/jwks') fetches += 1;
    await next();
  });
  server.on('request', provider.callback());
  return {
    issuer,
    port,
    keys,
    jwksFetches: () => fetches,
    async clientCredentials({ scope = SCOPES, resource = AUDIENCE } = {}) {
      const response = await fetch(`${issuer}/token`, {
        method: 'POST',
        headers: {
          authorization: `Basic ${Buffer.from('partner:partner-secret').toString('base64')}`,
          'content-type': 'application/x-www-form-urlencoded',
        },
        body: new URLSearchParams({ grant_type: 'client_credentials', scope, resource }),
      });
      const body = (await response.json()) as { access_token?: string };
      if (response.status !== 200 || body.access_token === undefined) {
        throw new Error(`client credentials: ${response.status} ${JSON.stringify(body)}`);
      }
      return body.access_token;
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
