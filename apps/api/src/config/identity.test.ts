import { describe, expect, it } from 'vitest';
import { loadConfig } from './config.ts';

const BASE = { API_TOKENS: 'plant-store-test-token' };
const load = (env: Record<string, string>) => loadConfig({ ...BASE, ...env });
const refusal = (env: Record<string, string>) => {
  try {
    load(env);
    return 'accepted';
  } catch (error) {
    return (error as Error).message;
  }
};

describe('identity provider settings', () => {
  it('none by default: opaque tokens only', () => {
    expect(load({}).identity).toStrictEqual({ issuers: [], jwksCooldownMs: 30_000 });
  });

  it('reads OIDC_ISSUER with OIDC_AUDIENCE and OIDC_CLIENT_ID as one issuer', () => {
    expect(
      load({ OIDC_ISSUER: 'https://id.example', OIDC_AUDIENCE: 'plants', OIDC_CLIENT_ID: 'console' })
        .identity,
    ).toStrictEqual({
      issuers: [
        { issuer: 'https://id.example', audience: 'plants', clientId: 'console', requireAtJwt: false },
      ],
      jwksCooldownMs: 30_000,
    });
  });

  it('reads OIDC_ISSUERS as a JSON array with per-issuer scope maps', () => {
    const issuers = [
      { issuer: 'https://a.example/realms/x', audience: 'plants', scopeMap: { 'Plants.Read': ['read'] } },
      { issuer: 'http://127.0.0.1:8080', audience: 'api://plants', requireAtJwt: true },
    ];
    expect(
      load({ OIDC_ISSUERS: JSON.stringify(issuers), OIDC_JWKS_COOLDOWN_MS: '5000' }).identity,
    ).toStrictEqual({
      issuers: [
        { ...issuers[0], requireAtJwt: false },
        { ...issuers[1], requireAtJwt: true },
      ],
      jwksCooldownMs: 5_000,
    });
  });

  it('refuses what would be unsafe or ambiguous, naming the variable', () => {
    expect(
      (
        [
          { OIDC_ISSUER: 'http://id.example', OIDC_AUDIENCE: 'plants' },
          { OIDC_ISSUER: 'https://id.example#frag', OIDC_AUDIENCE: 'plants' },
          { OIDC_ISSUER: 'https://id.example' },
          { OIDC_ISSUERS: 'not json' },
          { OIDC_ISSUERS: '[{"issuer":"https://a.example","audience":"x","scope_map":{}}]' },
          { OIDC_ISSUERS: '[{"issuer":"https://a.example","audience":"x","scopeMap":{"s":["admin"]}}]' },
          {
            OIDC_ISSUERS:
              '[{"issuer":"https://a.example","audience":"x"},{"issuer":"https://a.example","audience":"y"}]',
          },
          {
            OIDC_ISSUERS: '[{"issuer":"https://a.example","audience":"x"}]',
            OIDC_ISSUER: 'https://b.example',
          },
          { OIDC_JWKS_COOLDOWN_MS: '10' },
        ] as Record<string, string>[]
      ).map(refusal),
    ).toStrictEqual([
      'Invalid configuration: OIDC_ISSUER must be an https:// URL (http:// only on a loopback host) with no query or fragment',
      'Invalid configuration: OIDC_ISSUER must be an https:// URL (http:// only on a loopback host) with no query or fragment',
      'Invalid configuration: OIDC_AUDIENCE is required with OIDC_ISSUER',
      'Invalid configuration: OIDC_ISSUERS must be a JSON array of {issuer, audience, …}',
      expect.stringMatching(/^Invalid configuration: OIDC_ISSUERS\.0 Unrecognized key: "scope_map"/),
      expect.stringMatching(/^Invalid configuration: OIDC_ISSUERS\.0\.scopeMap\.s\.0 /),
      'Invalid configuration: OIDC_ISSUERS must name each issuer once',
      'Invalid configuration: set either OIDC_ISSUERS or OIDC_ISSUER (with OIDC_AUDIENCE), not both',
      expect.stringMatching(/^Invalid configuration: OIDC_JWKS_COOLDOWN_MS /),
    ]);
  });
});
