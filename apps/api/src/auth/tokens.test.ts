import { describe, expect, it } from 'vitest';
import {
  configuredTokenName,
  createTokenVerifier,
  isConfiguredTokenName,
  isLegacyTokenName,
  tokenDigest,
} from './tokens.ts';

const CONFIGURED = 'configured-secret-0123456789';
const ISSUED = 'pst_issued-secret-0123456789';
const bearer = (secret: string) => `Bearer ${secret}`;

describe('createTokenVerifier', () => {
  it('refuses issued tokens once the last reload is older than its bound, configured ones never', () => {
    let now = 0;
    const verifier = createTokenVerifier(
      [{ name: configuredTokenName(CONFIGURED), secret: CONFIGURED, scopes: ['read', 'write'] }],
      { issuedMaxAgeMs: 600, now: () => now },
    );
    verifier.setIssued([{ name: 'reporting', digest: tokenDigest(ISSUED), scopes: ['read'] }]);
    now = 600;
    expect(verifier.issuedStale()).toBe(false);
    expect(verifier.verify(bearer(ISSUED))).toEqual({
      ok: true,
      principal: { tokenName: 'reporting', scopes: ['read'] },
    });
    now = 601;
    expect(verifier.issuedStale()).toBe(true);
    expect(verifier.verify(bearer(ISSUED))).toEqual({ ok: false, reason: 'invalid' });
    expect(verifier.verify(bearer(CONFIGURED))).toMatchObject({ ok: true });
    // A successful reload accepts them again, for another bound.
    verifier.setIssued([{ name: 'reporting', digest: tokenDigest(ISSUED), scopes: ['read'] }]);
    expect(verifier.verify(bearer(ISSUED))).toMatchObject({ ok: true });
    now = 1_202;
    expect(verifier.verify(bearer(ISSUED))).toEqual({ ok: false, reason: 'invalid' });
  });

  it('refuses an issued token as soon as a reload drops it, though it was accepted just before', () => {
    const verifier = createTokenVerifier([]);
    verifier.setIssued([{ name: 'reporting', digest: tokenDigest(ISSUED), scopes: ['read'] }]);
    for (let i = 0; i < 3; i++) expect(verifier.verify(bearer(ISSUED)).ok).toBe(true);
    verifier.setIssued([]);
    expect(verifier.verify(bearer(ISSUED))).toEqual({ ok: false, reason: 'invalid' });
    // Scheme case and spacing still matter only as RFC 6750 says, cached or not.
    verifier.setIssued([{ name: 'reporting', digest: tokenDigest(ISSUED), scopes: ['read'] }]);
    expect(verifier.verify(`bearer   ${ISSUED}`).ok).toBe(true);
    expect(verifier.verify(`Bearer ${ISSUED}x`)).toEqual({ ok: false, reason: 'invalid' });
    expect(verifier.verify(`Basic ${ISSUED}`)).toEqual({ ok: false, reason: 'invalid' });
  });

  it('ignores issued tokens that hold a configured name', () => {
    const verifier = createTokenVerifier([{ name: 'tester', secret: CONFIGURED, scopes: ['read'] }]);
    const names = [
      'tester',
      'api-token-1',
      'api-token-12',
      'generated',
      configuredTokenName(ISSUED),
      'api-token-x',
    ];
    verifier.setIssued(
      names.map((name) => ({ name, digest: tokenDigest(`pst_${name}-0123456789`), scopes: ['read'] })),
    );
    expect(names.map((name) => verifier.verify(bearer(`pst_${name}-0123456789`)).ok)).toEqual([
      false,
      false,
      false,
      false,
      false,
      true,
    ]);
  });

  it('says where a name stands: configured here, issued and loaded, inactive, or unknown while stale', () => {
    let now = 0;
    const configured = configuredTokenName(CONFIGURED);
    const verifier = createTokenVerifier([{ name: configured, secret: CONFIGURED, scopes: ['read'] }], {
      issuedMaxAgeMs: 600,
      now: () => now,
    });
    verifier.setIssued([{ name: 'reporting', digest: tokenDigest(ISSUED), scopes: ['webhooks'] }]);
    expect(verifier.standing(configured)).toEqual({ state: 'active', scopes: ['read'] });
    expect(verifier.standing('reporting')).toEqual({ state: 'active', scopes: ['webhooks'] });
    // Another instance's configured token, one of an earlier version, one revoked (not loaded).
    for (const name of [configuredTokenName('another-secret-0123456789'), 'api-token-1', 'generated', 'gone'])
      expect(verifier.standing(name)).toEqual({ state: 'inactive' });
    now = 601;
    // Issued names are unknown while a revocation may have been missed; configured ones are not.
    expect(verifier.standing('reporting')).toEqual({ state: 'unknown' });
    expect(verifier.standing('gone')).toEqual({ state: 'unknown' });
    expect(verifier.standing(configured)).toEqual({ state: 'active', scopes: ['read'] });
    expect(verifier.standing('api-token-1')).toEqual({ state: 'inactive' });
    verifier.setIssued([]);
    expect(verifier.standing('reporting')).toEqual({ state: 'inactive' });
  });
});

describe('configuredTokenName', () => {
  it('names a token by the first 12 hex digits of its SHA-256 digest, whatever its position', () => {
    expect(configuredTokenName(CONFIGURED)).toBe(`api-token-${tokenDigest(CONFIGURED).slice(0, 12)}`);
    expect(configuredTokenName(CONFIGURED)).toMatch(/^api-token-[0-9a-f]{12}$/);
    expect(configuredTokenName(`${CONFIGURED}x`)).not.toBe(configuredTokenName(CONFIGURED));
  });
});

describe('isConfiguredTokenName and isLegacyTokenName', () => {
  it.each([
    ['api-token-1', true, true],
    ['api-token-20', true, true],
    ['api-token-99999999999', true, true],
    ['generated', true, true],
    ['api-token-0f1e2d3c4b5a', true, false],
    // A digest's first 12 hex digits may all be decimal ones: a derived name, not a position.
    ['api-token-123456789012', true, false],
    ['api-token-', false, false],
    ['api-token-01', false, false],
    ['api-token-1a', false, false],
    ['api-token-0F1E2D3C4B5A', false, false],
    ['generated-2', false, false],
    ['reporting', false, false],
  ])('%s → reserved %s, of an earlier version %s', (name, reserved, legacy) => {
    expect(isConfiguredTokenName(name)).toBe(reserved);
    expect(isLegacyTokenName(name)).toBe(legacy);
  });
});
