import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { redactUrl, redactUrls, urlDigest } from './send.ts';

describe('redactUrl', () => {
  it('keeps the origin only: drops credentials, path (where Slack keeps its secret), query and fragment', () => {
    expect(redactUrl('https://user:pa55@hooks.example:8443/plants/new?token=t0k#x')).toBe(
      'https://hooks.example:8443',
    );
    expect(redactUrl('https://hooks.slack.com/services/T0000/B0000/XXXXXXXXXXXXXXXXXXXXXXXX')).toBe(
      'https://hooks.slack.com',
    );
    expect(redactUrl('not a url')).toBe('(not a URL)');
  });
});

describe('urlDigest', () => {
  it('is the first 12 hex digits of the SHA-256 of the URL, as sha256sum prints it', () => {
    expect(urlDigest('https://hooks.slack.com/services/T0000/B0000/XXXX')).toBe(
      createHash('sha256')
        .update('https://hooks.slack.com/services/T0000/B0000/XXXX')
        .digest('hex')
        .slice(0, 12),
    );
    expect(urlDigest('https://a.example/1')).not.toBe(urlDigest('https://a.example/2'));
  });
});

describe('redactUrls', () => {
  it("redacts every URL inside an error's text, wherever it stands", () => {
    expect(
      redactUrls(
        'request failed (Request cannot be constructed from a URL that includes credentials: http://user:secret-pass@127.0.0.1:1/hook?token=q)',
      ),
    ).toBe(
      'request failed (Request cannot be constructed from a URL that includes credentials: http://127.0.0.1:1)',
    );
    expect(redactUrls('from https://a.example/x?k=1 to HTTP://u:p@b.example/y')).toBe(
      'from https://a.example to http://b.example',
    );
    expect(redactUrls('HTTP 503')).toBe('HTTP 503');
  });
});
