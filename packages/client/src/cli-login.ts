import { chmod, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import * as oauth from 'oauth4webapi';
import { UsageError } from './cli-support.ts';

/**
 * `plants login` and `plants logout` (docs/identity.md): the OAuth device authorization grant
 * (RFC 8628) with the provider the server names at `GET /auth/provider`, and the tokens kept in
 * `$XDG_CONFIG_HOME/plant-store/credentials.json` (default ~/.config), readable by its user only,
 * one entry per server URL. A command uses them when neither --token nor PLANTS_TOKEN is given,
 * refreshing the access token shortly before it expires.
 */

type Provider = { issuer: string; clientId: string; audience: string; scopes: string[] };
type Saved = {
  issuer: string;
  clientId: string;
  audience: string;
  accessToken: string;
  refreshToken?: string;
  expiresAt: number;
};
type Credentials = Record<string, Saved>;

/** Refresh this long before the access token expires: a command started just before must not fail. */
const REFRESH_MARGIN_MS = 60_000;

export class LoginError extends Error {}

/** Where the credentials live: `$XDG_CONFIG_HOME/plant-store`, else `~/.config/plant-store`. */
export function credentialsFile(env: NodeJS.ProcessEnv): string {
  const base = env.XDG_CONFIG_HOME?.startsWith('/') ? env.XDG_CONFIG_HOME : join(homedir(), '.config');
  return join(base, 'plant-store', 'credentials.json');
}

async function readCredentials(file: string): Promise<Credentials> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as Credentials;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new LoginError(`cannot read ${file}: ${(error as Error).message}`);
  }
}

/** Writes the whole file anew (0600, in a 0700 directory), then renames it over the old one. */
async function writeCredentials(file: string, credentials: Credentials): Promise<void> {
  const dir = join(file, '..');
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const temporary = `${file}.${process.pid}.tmp`;
  await writeFile(temporary, `${JSON.stringify(credentials, null, 2)}\n`, { mode: 0o600 });
  await chmod(temporary, 0o600);
  await rename(temporary, file);
}

/** Loopback http is allowed (a provider on this machine); anything else must be https. */
function insecureAllowed(url: string) {
  const { protocol, hostname } = new URL(url);
  return {
    [oauth.allowInsecureRequests]:
      protocol === 'http:' && ['127.0.0.1', '[::1]', 'localhost'].includes(hostname),
  };
}

async function discover(issuer: string): Promise<oauth.AuthorizationServer> {
  const url = new URL(issuer);
  const options = insecureAllowed(issuer);
  return oauth.processDiscoveryResponse(url, await oauth.discoveryRequest(url, options));
}

async function providerOf(baseUrl: string): Promise<Provider> {
  const response = await fetch(new URL('/auth/provider', baseUrl), { signal: AbortSignal.timeout(30_000) });
  const body = (await response.json().catch(() => ({}))) as { provider?: Provider | null };
  if (response.status !== 200 || body.provider === undefined) {
    throw new LoginError(
      `${baseUrl} did not say where to sign in (GET /auth/provider answered ${response.status}).`,
    );
  }
  if (body.provider === null) {
    throw new LoginError(`${baseUrl} has no identity provider: use a token it issued (PLANTS_TOKEN).`);
  }
  return body.provider;
}

/**
 * Signs in with the device flow: prints where to go and the code to `tell`, polls the provider
 * until the person approves (or refuses, or the code expires), and saves the tokens.
 */
export async function login(
  baseUrl: string,
  tell: (line: string) => void,
  env: NodeJS.ProcessEnv,
): Promise<void> {
  const provider = await providerOf(baseUrl);
  const as = await discover(provider.issuer);
  const client = { client_id: provider.clientId };
  const auth = oauth.None();
  const options = insecureAllowed(provider.issuer);
  const scope = provider.scopes.filter((s) => s !== 'openid').join(' ');
  const device = await oauth.processDeviceAuthorizationResponse(
    as,
    client,
    await oauth.deviceAuthorizationRequest(as, client, auth, { scope, resource: provider.audience }, options),
  );
  tell(`To sign in, open ${device.verification_uri_complete ?? device.verification_uri}`);
  tell(`and check that it shows the code ${device.user_code}.`);
  let interval = (device.interval ?? 5) * 1000;
  const deadline = Date.now() + device.expires_in * 1000;
  while (Date.now() < deadline) {
    await sleep(interval);
    try {
      const tokens = await oauth.processDeviceCodeResponse(
        as,
        client,
        await oauth.deviceCodeGrantRequest(as, client, auth, device.device_code, options),
      );
      await save(baseUrl, provider, tokens, env);
      tell(`Signed in to ${baseUrl}.`);
      return;
    } catch (error) {
      if (error instanceof oauth.ResponseBodyError && error.error === 'authorization_pending') continue;
      if (error instanceof oauth.ResponseBodyError && error.error === 'slow_down') {
        interval += 5_000;
        continue;
      }
      if (error instanceof oauth.ResponseBodyError) {
        throw new LoginError(`sign-in refused: ${error.error_description ?? error.error}`);
      }
      throw error;
    }
  }
  throw new LoginError('the code expired before sign-in was approved: run plants login again.');
}

async function save(
  baseUrl: string,
  provider: Pick<Provider, 'issuer' | 'clientId' | 'audience'>,
  tokens: oauth.TokenEndpointResponse,
  env: NodeJS.ProcessEnv,
) {
  const file = credentialsFile(env);
  const credentials = await readCredentials(file);
  credentials[baseUrl] = {
    issuer: provider.issuer,
    clientId: provider.clientId,
    audience: provider.audience,
    accessToken: tokens.access_token,
    ...(tokens.refresh_token !== undefined && { refreshToken: tokens.refresh_token }),
    expiresAt: Date.now() + (tokens.expires_in ?? 300) * 1000,
  };
  await writeCredentials(file, credentials);
}

/**
 * The saved access token for `baseUrl`, refreshed first when it expires within a minute;
 * `undefined` when there is none (never logged in, logged out, or the refresh was refused).
 */
export async function savedToken(baseUrl: string, env: NodeJS.ProcessEnv): Promise<string | undefined> {
  const file = credentialsFile(env);
  const saved = (await readCredentials(file))[baseUrl];
  if (saved === undefined) return undefined;
  if (saved.expiresAt - REFRESH_MARGIN_MS > Date.now()) return saved.accessToken;
  if (saved.refreshToken === undefined) return undefined;
  const as = await discover(saved.issuer);
  const client = { client_id: saved.clientId };
  const options = { ...insecureAllowed(saved.issuer), additionalParameters: { resource: saved.audience } };
  try {
    const tokens = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, oauth.None(), saved.refreshToken, options),
    );
    await save(baseUrl, saved, { ...tokens, refresh_token: tokens.refresh_token ?? saved.refreshToken }, env);
    return tokens.access_token;
  } catch (error) {
    if (error instanceof oauth.ResponseBodyError) return undefined;
    throw error;
  }
}

/** Forgets the tokens of `baseUrl` (revoking its refresh token where the provider offers it). */
export async function logout(baseUrl: string, env: NodeJS.ProcessEnv): Promise<boolean> {
  const file = credentialsFile(env);
  const credentials = await readCredentials(file);
  const saved = credentials[baseUrl];
  if (saved === undefined) return false;
  delete credentials[baseUrl];
  if (Object.keys(credentials).length === 0) await rm(file, { force: true });
  else await writeCredentials(file, credentials);
  if (saved.refreshToken !== undefined) {
    try {
      const as = await discover(saved.issuer);
      if (as.revocation_endpoint !== undefined) {
        const client = { client_id: saved.clientId };
        const response = await oauth.revocationRequest(
          as,
          client,
          oauth.None(),
          saved.refreshToken,
          insecureAllowed(saved.issuer),
        );
        await oauth.processRevocationResponse(response);
      }
    } catch {
      // Forgotten here already; the provider's refresh token then lapses on its own.
    }
  }
  return true;
}

/** `plants login` / `plants logout` for `baseUrl`: the exit code. */
export async function signIn(
  command: 'login' | 'logout',
  baseUrl: string,
  operands: string[],
  env: NodeJS.ProcessEnv,
): Promise<number> {
  if (operands.length > 0) throw new UsageError(`${command} takes no operand ("${operands[0]}").`);
  const tell = (line: string) => process.stderr.write(`${line}\n`);
  if (command === 'login') {
    await login(baseUrl, tell, env);
    return 0;
  }
  tell((await logout(baseUrl, env)) ? `Signed out of ${baseUrl}.` : `Not signed in to ${baseUrl}.`);
  return 0;
}
