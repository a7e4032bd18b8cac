import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { loadConfig } from './config.ts';

const SECRET = `whsec_${randomBytes(32).toString('base64')}`;

describe('loadConfig: webhooks', () => {
  it('has no webhooks without WEBHOOK_URLS', () => {
    expect(loadConfig({}).webhooks).toBeUndefined();
    expect(loadConfig({ WEBHOOK_URLS: ' , ', WEBHOOK_SECRET: SECRET }).webhooks).toBeUndefined();
  });

  it('reads the subscribers, trimmed and without repeats, the secret and the defaults', () => {
    const config = loadConfig({
      WEBHOOK_URLS: 'https://a.example/hook, http://127.0.0.1:8080/x?t=1,https://a.example/hook',
      WEBHOOK_SECRET: SECRET,
    });
    expect(config.webhooks).toStrictEqual({
      urls: ['https://a.example/hook', 'http://127.0.0.1:8080/x?t=1'],
      secret: SECRET,
      timeoutMs: 10_000,
      maxAttempts: 15,
      backoffBaseMs: 1_000,
      backoffMaxMs: 3_600_000,
      pollIntervalMs: 1_000,
      leaseMs: 60_000,
      concurrency: 8,
    });
  });

  it.each([
    [{ WEBHOOK_URLS: 'https://a.example/hook' }, 'WEBHOOK_SECRET is required when WEBHOOK_URLS is set'],
    [{ WEBHOOK_URLS: 'ftp://a.example/hook', WEBHOOK_SECRET: SECRET }, 'WEBHOOK_URLS must be'],
    [{ WEBHOOK_URLS: 'a.example/hook', WEBHOOK_SECRET: SECRET }, 'WEBHOOK_URLS must be'],
    [{ WEBHOOK_SECRET: 'not-a-secret' }, 'WEBHOOK_SECRET must be whsec_'],
    [{ WEBHOOK_SECRET: `whsec_${randomBytes(8).toString('base64')}` }, 'WEBHOOK_SECRET must be whsec_'],
    [{ WEBHOOK_MAX_ATTEMPTS: '0' }, 'WEBHOOK_MAX_ATTEMPTS'],
    [
      {
        WEBHOOK_URLS: 'https://a.example/',
        WEBHOOK_SECRET: SECRET,
        WEBHOOK_LEASE_MS: '5000',
        WEBHOOK_TIMEOUT_MS: '5000',
      },
      'WEBHOOK_LEASE_MS must be greater than WEBHOOK_TIMEOUT_MS',
    ],
  ])('refuses %j, naming the variable', (env, message) => {
    expect(() => loadConfig(env)).toThrow(message);
  });

  it('never repeats the secret in its error', () => {
    const secret = 'whsec_short';
    expect(() => loadConfig({ WEBHOOK_SECRET: secret })).toThrow(/^((?!whsec_short).)*$/);
  });
});
