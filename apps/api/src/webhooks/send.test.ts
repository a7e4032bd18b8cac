import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { redactUrl, redactUrls, webhookSigner } from './send.ts';

describe('webhookSigner', () => {
  it('signs exactly as standardwebhooks does, whatever the secret and payload', () => {
    for (const bytes of [24, 32, 64]) {
      const secret = `whsec_${randomBytes(bytes).toString('base64')}`;
      const sign = webhookSigner(secret);
      const reference = new Webhook(secret);
      for (const payload of ['{"id":1,"name":"Fern"}', '{"name":"Fougère 🌿","tag":"\\u0000"}', '']) {
        const at = new Date(1_790_000_000_123);
        expect(sign('msg_0123456789abcdef0123456789abcdef', at, payload)).toBe(
          reference.sign('msg_0123456789abcdef0123456789abcdef', at, payload),
        );
      }
    }
  });
});

describe('redactUrl', () => {
  it('keeps the origin and path, drops credentials, query and fragment', () => {
    expect(redactUrl('https://user:pa55@hooks.example:8443/plants/new?token=t0k#x')).toBe(
      'https://hooks.example:8443/plants/new',
    );
    expect(redactUrl('not a url')).toBe('(not a URL)');
  });
});

describe('redactUrls', () => {
  it("redacts every URL inside an error's text, wherever it stands", () => {
    expect(
      redactUrls(
        'request failed (Request cannot be constructed from a URL that includes credentials: http://user:secret-pass@127.0.0.1:1/hook?token=q)',
      ),
    ).toBe(
      'request failed (Request cannot be constructed from a URL that includes credentials: http://127.0.0.1:1/hook)',
    );
    expect(redactUrls('from https://a.example/x?k=1 to HTTP://u:p@b.example/y')).toBe(
      'from https://a.example/x to http://b.example/y',
    );
    expect(redactUrls('HTTP 503')).toBe('HTTP 503');
  });
});
