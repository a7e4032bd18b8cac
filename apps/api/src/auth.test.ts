import { describe, expect, it } from 'vitest';
import { createTokenVerifier, isConfiguredTokenName, tokenDigest } from './auth.ts';

const CONFIGURED = 'configured-secret-0123456789';
const ISSUED = 'pst_issued-secret-0123456789';
const bearer = (secret: string) => `Bearer ${secret}`;

describe('createTokenVerifier', () => {
  it('refuses issued tokens once the last reload is older than its bound, configured ones never', () => {
    let now = 0;
    const verifier = createTokenVerifier(
      [{ name: 'api-token-1', secret: CONFIGURED, scopes: ['read', 'write'] }],
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
    const names = ['tester', 'api-token-1', 'api-token-12', 'generated', 'api-token-x'];
    verifier.setIssued(
      names.map((name) => ({ name, digest: tokenDigest(`pst_${name}-0123456789`), scopes: ['read'] })),
    );
    expect(names.map((name) => verifier.verify(bearer(`pst_${name}-0123456789`)).ok)).toEqual([
      false,
      false,
      false,
      false,
      true,
    ]);
  });
});

describe('isConfiguredTokenName', () => {
  it.each([
    ['api-token-1', true],
    ['api-token-20', true],
    ['generated', true],
    ['api-token-', false],
    ['api-token-1a', false],
    ['generated-2', false],
    ['reporting', false],
  ])('%s → %s', (name, reserved) => {
    expect(isConfiguredTokenName(name)).toBe(reserved);
  });
});
