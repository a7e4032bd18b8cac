// A minimal OpenID issuer for the `get-jwt` scenario: a discovery document and a JWKS on loopback,
// and one ES256 access token of an hour for the api's audience, as a provider would sign it. What is
// measured is the api's check of that token on each request, not the issuer (asked once).
import { createServer } from 'node:http';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';

export const AUDIENCE = 'https://plants.example/bench';

export async function startIssuer() {
  const { publicKey, privateKey } = await generateKeyPair('ES256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'bench-1', alg: 'ES256', use: 'sig' };
  const server = createServer((req, res) => {
    const body =
      req.url === '/.well-known/openid-configuration'
        ? { issuer, jwks_uri: `${issuer}/jwks` }
        : req.url === '/jwks'
          ? { keys: [jwk] }
          : undefined;
    res.writeHead(body ? 200 : 404, { 'content-type': 'application/json' }).end(JSON.stringify(body ?? {}));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const now = Math.floor(Date.now() / 1000);
  const token = await new SignJWT({ scope: 'plants:read' })
    .setProtectedHeader({ alg: 'ES256', kid: jwk.kid, typ: 'at+jwt' })
    .setIssuer(issuer)
    .setAudience(AUDIENCE)
    .setSubject('bench-client')
    .setIssuedAt(now)
    .setExpirationTime(now + 3600)
    .sign(privateKey);
  return { issuer, token, close: () => new Promise((resolve) => server.close(resolve)) };
}
