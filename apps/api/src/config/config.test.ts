import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { loadConfig } from './config.ts';

const SECRET = `whsec_${randomBytes(32).toString('base64')}`;

describe('loadConfig: webhooks', () => {
  it('has no operator subscribers (nor their secret) without WEBHOOK_URLS, but the delivery settings', () => {
    for (const env of [{}, { WEBHOOK_URLS: ' , ', WEBHOOK_SECRET: SECRET }]) {
      const { webhooks } = loadConfig(env);
      expect(webhooks.urls).toStrictEqual([]);
      expect(webhooks).not.toHaveProperty('secret');
      expect(webhooks).toMatchObject({ timeoutMs: 10_000, maxAttempts: 15, concurrency: 32 });
    }
  });

  it('reads the settings of registered endpoints, with their defaults', () => {
    expect(loadConfig({}).webhookEndpoints).toStrictEqual({
      secretsKey: undefined,
      secretOverlapMs: 86_400_000,
      allowPrivateUrls: false,
      perToken: 20,
      pendingPerEndpoint: 1_000,
      dns: { servers: undefined, timeoutMs: 5_000, concurrency: 64, perTokenConcurrency: 4 },
    });
    const key = randomBytes(32);
    expect(
      loadConfig({
        WEBHOOK_SECRETS_KEY: key.toString('base64'),
        WEBHOOK_SECRET_OVERLAP_MS: '5000',
        WEBHOOK_ALLOW_PRIVATE_URLS: '1',
        WEBHOOK_ENDPOINTS_PER_TOKEN: '3',
        WEBHOOK_PENDING_PER_ENDPOINT: '10',
        WEBHOOK_DNS_SERVERS: '127.0.0.1:5353, [::1]:53,192.0.2.53',
        WEBHOOK_DNS_TIMEOUT_MS: '800',
        WEBHOOK_DNS_CONCURRENCY: '8',
        WEBHOOK_DNS_CONCURRENCY_PER_TOKEN: '2',
      }).webhookEndpoints,
    ).toStrictEqual({
      secretsKey: key,
      secretOverlapMs: 5_000,
      allowPrivateUrls: true,
      perToken: 3,
      pendingPerEndpoint: 10,
      dns: {
        servers: ['127.0.0.1:5353', '[::1]:53', '192.0.2.53'],
        timeoutMs: 800,
        concurrency: 8,
        perTokenConcurrency: 2,
      },
    });
  });

  it.each([
    [
      { WEBHOOK_SECRETS_KEY: randomBytes(16).toString('base64') },
      'WEBHOOK_SECRETS_KEY must be base64 of 32 random bytes',
    ],
    [{ WEBHOOK_SECRETS_KEY: 'not base64!' }, 'WEBHOOK_SECRETS_KEY must be base64 of 32 random bytes'],
    [{ WEBHOOK_ALLOW_PRIVATE_URLS: 'yes' }, 'WEBHOOK_ALLOW_PRIVATE_URLS must be 1 or 0'],
    [{ WEBHOOK_ENDPOINTS_PER_TOKEN: '-1' }, 'WEBHOOK_ENDPOINTS_PER_TOKEN'],
    [{ WEBHOOK_PENDING_PER_ENDPOINT: '0' }, 'WEBHOOK_PENDING_PER_ENDPOINT'],
    [{ WEBHOOK_FAILED_RETENTION_MS: '-1' }, 'WEBHOOK_FAILED_RETENTION_MS'],
    [
      { WEBHOOK_DNS_SERVERS: 'dns.example' },
      'WEBHOOK_DNS_SERVERS must be comma-separated name server addresses',
    ],
    [{ WEBHOOK_DNS_SERVERS: ' , ' }, 'WEBHOOK_DNS_SERVERS must be comma-separated name server addresses'],
    [{ WEBHOOK_DNS_TIMEOUT_MS: '50' }, 'WEBHOOK_DNS_TIMEOUT_MS'],
    [{ WEBHOOK_DNS_CONCURRENCY: '0' }, 'WEBHOOK_DNS_CONCURRENCY'],
    [{ WEBHOOK_DNS_CONCURRENCY_PER_TOKEN: '0' }, 'WEBHOOK_DNS_CONCURRENCY_PER_TOKEN'],
  ])('refuses a bad endpoint setting %o', (env, message) => {
    expect(() => loadConfig(env)).toThrow(message);
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
      concurrency: 32,
      breaker: { failures: 5, cooldownMs: 30_000 },
      retentionMs: 86_400_000,
      failedRetentionMs: 604_800_000,
    });
  });

  it('reads the per-subscriber breaker and the retention of delivered deliveries', () => {
    const config = loadConfig({
      WEBHOOK_URLS: 'https://a.example/hook',
      WEBHOOK_SECRET: SECRET,
      WEBHOOK_BREAKER_FAILURES: '3',
      WEBHOOK_BREAKER_COOLDOWN_MS: '1000',
      WEBHOOK_RETENTION_MS: '0',
      WEBHOOK_FAILED_RETENTION_MS: '60000',
    });
    expect(config.webhooks).toMatchObject({
      breaker: { failures: 3, cooldownMs: 1_000 },
      retentionMs: 0,
      failedRetentionMs: 60_000,
    });
  });

  it('refuses a subscriber URL carrying credentials, without repeating it', () => {
    for (const url of ['https://user:pa55word@a.example/hook', 'https://only-user@a.example/hook']) {
      let message = '';
      try {
        loadConfig({ WEBHOOK_URLS: `https://b.example/ok,${url}`, WEBHOOK_SECRET: SECRET });
      } catch (error) {
        message = (error as Error).message;
      }
      expect(message).toBe(
        'Invalid configuration: WEBHOOK_URLS must not carry credentials (user:password@); subscribers authenticate deliveries by their signature',
      );
    }
  });

  it.each([
    [{ WEBHOOK_URLS: 'https://a.example/hook' }, 'WEBHOOK_SECRET is required when WEBHOOK_URLS is set'],
    [{ WEBHOOK_URLS: 'ftp://a.example/hook', WEBHOOK_SECRET: SECRET }, 'WEBHOOK_URLS must be'],
    [{ WEBHOOK_URLS: 'a.example/hook', WEBHOOK_SECRET: SECRET }, 'WEBHOOK_URLS must be'],
    [{ WEBHOOK_SECRET: 'not-a-secret' }, 'WEBHOOK_SECRET must be whsec_'],
    [{ WEBHOOK_SECRET: `whsec_${randomBytes(8).toString('base64')}` }, 'WEBHOOK_SECRET must be whsec_'],
    [{ WEBHOOK_MAX_ATTEMPTS: '0' }, 'WEBHOOK_MAX_ATTEMPTS'],
    [{ WEBHOOK_BREAKER_FAILURES: '0' }, 'WEBHOOK_BREAKER_FAILURES'],
    [{ WEBHOOK_BREAKER_COOLDOWN_MS: 'soon' }, 'WEBHOOK_BREAKER_COOLDOWN_MS'],
    [{ WEBHOOK_RETENTION_MS: '-1' }, 'WEBHOOK_RETENTION_MS'],
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

describe('loadConfig: API_TOKENS', () => {
  it('reads comma-separated tokens of 16 characters or more', () => {
    expect(loadConfig({ API_TOKENS: ' plant-store-token-1 ,0123456789abcdef' }).apiTokens).toEqual([
      'plant-store-token-1',
      '0123456789abcdef',
    ]);
  });

  it.each([
    ['0123456789abcde', 'API_TOKENS must hold tokens of at least 16 characters'],
    ['plant-store-token-1,secret', 'API_TOKENS must hold tokens of at least 16 characters'],
    ['plant store token 1', 'API_TOKENS must hold tokens of letters, digits and -._~+/'],
    [' , ', 'API_TOKENS must list at least one token'],
  ])('refuses %j, naming the variable and never the token', (tokens, message) => {
    expect(() => loadConfig({ API_TOKENS: tokens })).toThrow(message);
    try {
      loadConfig({ API_TOKENS: tokens });
    } catch (error) {
      for (const token of tokens.split(',')) {
        if (token.trim() !== '') expect((error as Error).message).not.toContain(token.trim());
      }
    }
  });
});

describe('loadConfig: Redis and failed authentication', () => {
  it('bounds Redis calls at 250 ms and failed authentications at 30 per window by default', () => {
    const config = loadConfig({ RATE_LIMIT_WINDOW_SECONDS: '120' });
    expect(config.redisTimeoutMs).toBe(250);
    expect(config.authFailureLimit).toEqual({ points: 30, windowSeconds: 120 });
    expect(loadConfig({ AUTH_FAILURE_MAX: '0' }).authFailureLimit).toBeUndefined();
  });

  it.each([
    [{ REDIS_TIMEOUT_MS: '5' }, 'REDIS_TIMEOUT_MS'],
    [{ AUTH_FAILURE_MAX: '-1' }, 'AUTH_FAILURE_MAX'],
  ])('refuses %j', (env, variable) => {
    expect(() => loadConfig(env)).toThrow(`Invalid configuration: ${variable}`);
  });
});

describe('loadConfig: Idempotency-Keys', () => {
  it('keeps keys 24 hours and lets a claim stay in flight 10 s by default', () => {
    expect(loadConfig({}).idempotency).toStrictEqual({ ttlMs: 86_400_000, inFlightMs: 10_000 });
    expect(
      loadConfig({ IDEMPOTENCY_TTL_MS: '3600000', IDEMPOTENCY_IN_FLIGHT_MS: '30000' }).idempotency,
    ).toStrictEqual({ ttlMs: 3_600_000, inFlightMs: 30_000 });
  });

  it('refuses a retention not longer than the in-flight bound, and one under a second', () => {
    expect(() => loadConfig({ IDEMPOTENCY_TTL_MS: '10000' })).toThrow(
      'Invalid configuration: IDEMPOTENCY_TTL_MS must be greater than IDEMPOTENCY_IN_FLIGHT_MS',
    );
    expect(() => loadConfig({ IDEMPOTENCY_TTL_MS: '999' })).toThrow(
      /^Invalid configuration: IDEMPOTENCY_TTL_MS /,
    );
  });
});

describe('loadConfig: tracing (OTEL_*)', () => {
  const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector.example:4318/' };

  it('is off without an endpoint, whatever else is set, and with OTEL_SDK_DISABLED=true', () => {
    expect(loadConfig({}).tracing).toBeUndefined();
    expect(loadConfig({ OTEL_SERVICE_NAME: 'x', OTEL_TRACES_SAMPLER: 'always_on' }).tracing).toBeUndefined();
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: '' }).tracing).toBeUndefined();
    expect(loadConfig({ ...endpoint, OTEL_SDK_DISABLED: 'TRUE' }).tracing).toBeUndefined();
  });

  it('sends to <endpoint>/v1/traces over http/protobuf, parent-based always on, by default', () => {
    expect(loadConfig(endpoint).tracing).toStrictEqual({
      url: 'http://collector.example:4318/v1/traces',
      protocol: 'http/protobuf',
      serviceName: undefined,
      sampler: { name: 'parentbased_always_on', ratio: 1 },
      scheduleDelayMs: 5_000,
      maxQueueSize: 2_048,
      maxExportBatchSize: 512,
    });
    expect(loadConfig({ ...endpoint, OTEL_SDK_DISABLED: 'false' }).tracing).toBeDefined();
  });

  it('prefers the traces endpoint and protocol, and reads the sampler, its ratio and the batching', () => {
    expect(
      loadConfig({
        ...endpoint,
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://traces.example/custom/path',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
        OTEL_SERVICE_NAME: 'plants-eu',
        OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
        OTEL_TRACES_SAMPLER_ARG: '0.25',
        OTEL_BSP_SCHEDULE_DELAY: '100',
        OTEL_BSP_MAX_QUEUE_SIZE: '10',
        OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '512',
      }).tracing,
    ).toStrictEqual({
      url: 'https://traces.example/custom/path',
      protocol: 'http/json',
      serviceName: 'plants-eu',
      sampler: { name: 'parentbased_traceidratio', ratio: 0.25 },
      scheduleDelayMs: 100,
      maxQueueSize: 10,
      // No more than the queue holds.
      maxExportBatchSize: 10,
    });
  });

  it.each([
    [
      { OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' },
      'OTEL_EXPORTER_OTLP_PROTOCOL must be http/protobuf or http/json',
    ],
    [{ OTEL_TRACES_SAMPLER: 'jaeger_remote' }, 'OTEL_TRACES_SAMPLER must be one of always_on'],
    [{ OTEL_TRACES_SAMPLER_ARG: '1.5' }, 'OTEL_TRACES_SAMPLER_ARG must be a number from 0 to 1'],
    [{ OTEL_TRACES_SAMPLER_ARG: 'half' }, 'OTEL_TRACES_SAMPLER_ARG must be a number from 0 to 1'],
    [{ OTEL_SDK_DISABLED: 'yes' }, 'OTEL_SDK_DISABLED must be true or false'],
  ])('refuses %o', (env, message) => {
    expect(() => loadConfig({ ...endpoint, ...env })).toThrow(`Invalid configuration: ${message}`);
  });

  it('never repeats an endpoint in its error (a URL can carry credentials)', () => {
    const url = 'ftp://user:hunter2@collector.example';
    for (const name of ['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT']) {
      expect(() => loadConfig({ [name]: url })).toThrow(`Invalid configuration: ${name} must be an http://`);
      expect(() => loadConfig({ [name]: url })).not.toThrow(/hunter2/);
    }
  });
});
