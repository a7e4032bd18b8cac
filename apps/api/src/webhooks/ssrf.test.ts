import { describe, expect, it } from 'vitest';
import { checkEndpointUrl, isPublicAddress, type Resolve, UnsafeUrlError } from './ssrf.ts';

/** A resolver answering `addresses` for every name (an IP literal still resolves to itself). */
const answering =
  (...addresses: string[]): Resolve =>
  async () =>
    addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));

const notFound: Resolve = async (hostname) => {
  throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
};

const STRICT = { allowPrivate: false };
const PRIVATE_ALLOWED = { allowPrivate: true };

/** Every class of address a third party must not reach, v4 and v6, with its mapped forms. */
const NON_PUBLIC: [string, string[]][] = [
  ['IPv4 loopback (127/8)', ['127.0.0.1', '127.1.2.3', '127.255.255.254']],
  [
    'IPv4 private (10/8, 172.16/12, 192.168/16)',
    ['10.0.0.1', '10.255.255.255', '172.16.0.1', '172.31.255.255', '192.168.0.1', '192.168.255.255'],
  ],
  [
    'IPv4 link-local (169.254/16), cloud metadata included',
    ['169.254.0.1', '169.254.169.254', '169.254.170.2'],
  ],
  ['IPv4 unspecified (0/8)', ['0.0.0.0', '0.1.2.3']],
  ['carrier-grade NAT (100.64/10)', ['100.64.0.1', '100.127.255.254']],
  ['IPv4 multicast (224/4)', ['224.0.0.1', '239.255.255.250']],
  ['IPv4 broadcast and reserved (240/4)', ['255.255.255.255', '240.0.0.1']],
  ['IETF protocol assignments (192.0.0/24)', ['192.0.0.1', '192.0.0.170']],
  ['IPv4 documentation', ['192.0.2.1', '198.51.100.7', '203.0.113.9']],
  ['IPv4 benchmarking (198.18/15)', ['198.18.0.1', '198.19.255.254']],
  ['6to4 relay anycast (192.88.99/24)', ['192.88.99.1']],
  ['IPv6 loopback and unspecified', ['::1', '::']],
  ['IPv6 link-local (fe80::/10)', ['fe80::1', 'febf::1', 'fe80::1%eth0']],
  ['IPv6 unique-local (fc00::/7)', ['fc00::1', 'fd12:3456:789a::1']],
  ['IPv6 site-local (fec0::/10, deprecated)', ['fec0::1']],
  ['IPv6 multicast (ff00::/8)', ['ff02::1', 'ff05::1:3']],
  [
    'IPv4-mapped IPv6 of non-public IPv4',
    [
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
      '::ffff:10.0.0.1',
      '::ffff:169.254.169.254',
      '::ffff:0.0.0.0',
      '::ffff:100.64.0.1',
    ],
  ],
  [
    'IPv4-compatible IPv6 (::/96, deprecated) of non-public IPv4',
    ['::127.0.0.1', '::7f00:1', '::10.0.0.1', '::a9fe:a9fe'],
  ],
  [
    'NAT64 of non-public IPv4 (64:ff9b::/96)',
    ['64:ff9b::127.0.0.1', '64:ff9b::10.0.0.1', '64:ff9b::a9fe:a9fe'],
  ],
  ['NAT64 for local use (64:ff9b:1::/48)', ['64:ff9b:1::a00:1', '64:ff9b:1::808:808']],
  ['IPv4/IPv6 translation (::ffff:0:0:0/96)', ['::ffff:0:7f00:1', '::ffff:0:808:808']],
  ['6to4 (2002::/16)', ['2002:7f00:1::1', '2002:c0a8:101::1', '2002:808:808::1']],
  ['Teredo (2001::/32)', ['2001:0:4136:e378:8000:63bf:3fff:fdd2', '2001::1']],
  ['IPv6 documentation (2001:db8::/32, 3fff::/20)', ['2001:db8::1', '3fff::1']],
  ['IPv6 benchmarking, ORCHID and other IETF assignments', ['2001:2::1', '2001:20::1', '2001:1::1']],
  ['IPv6 discard (100::/64)', ['100::1']],
  ['IPv6 outside global unicast (2000::/3)', ['1::1', '4000::1', '5f00::1', 'e000::1']],
  ['not an address', ['', 'localhost', '127.1', '0x7f000001', '1.2.3.4.5', '[::1]']],
];

const PUBLIC = [
  '8.8.8.8',
  '1.1.1.1',
  '93.184.215.14',
  '100.63.255.255',
  '100.128.0.1',
  '172.15.255.255',
  '172.32.0.1',
  '169.253.255.255',
  '192.167.255.255',
  '192.169.0.1',
  '223.255.255.254',
  '2001:4860:4860::8888',
  '2606:4700:4700::1111',
  '2a00:1450:4001:81c::200e',
  '::ffff:8.8.8.8',
  '::8.8.8.8',
  '::808:808',
  '64:ff9b::8.8.8.8',
];

describe('isPublicAddress', () => {
  it.each(NON_PUBLIC)('refuses %s', (_, addresses) => {
    for (const address of addresses) expect([address, isPublicAddress(address)]).toEqual([address, false]);
  });

  it('accepts public unicast addresses, their IPv4-mapped, IPv4-compatible and NAT64 forms included', () => {
    for (const address of PUBLIC) expect([address, isPublicAddress(address)]).toEqual([address, true]);
  });
});

/** The message `checkEndpointUrl` refuses `url` with (`undefined`: accepted). */
async function refusal(url: string, policy = STRICT, resolve?: Resolve): Promise<string | undefined> {
  try {
    await checkEndpointUrl(url, policy, resolve);
    return undefined;
  } catch (error) {
    expect(error).toBeInstanceOf(UnsafeUrlError);
    return (error as Error).message;
  }
}

const nonPublic = (host: string) =>
  `url: the host ${host} resolves to a non-public address (loopback, private, link-local or reserved); endpoints must be publicly reachable`;

describe('checkEndpointUrl', () => {
  it('accepts an https URL whose host resolves only to public addresses, on any port', async () => {
    expect(
      await refusal('https://hooks.example/plants?x=1', STRICT, answering('93.184.215.14')),
    ).toBeUndefined();
    expect(
      await refusal('https://hooks.example:8443/', STRICT, answering('2001:4860:4860::8888', '8.8.8.8')),
    ).toBeUndefined();
    // IP literals resolve to themselves, with the system resolver and no DNS.
    expect(await refusal('https://8.8.8.8:1/hook')).toBeUndefined();
    expect(await refusal('https://[2606:4700:4700::1111]:65535/hook')).toBeUndefined();
  });

  it.each(NON_PUBLIC.filter(([name]) => name !== 'not an address'))(
    'refuses a host resolving to %s',
    async (_, addresses) => {
      for (const address of addresses) {
        expect([address, await refusal('https://hooks.example/', STRICT, answering(address))]).toEqual([
          address,
          nonPublic('hooks.example'),
        ]);
      }
    },
  );

  it('refuses a host when any one of its addresses is not public', async () => {
    expect(await refusal('https://hooks.example/', STRICT, answering('8.8.8.8', '10.0.0.1'))).toBe(
      nonPublic('hooks.example'),
    );
    expect(await refusal('https://hooks.example/', STRICT, answering('2001:4860:4860::8888', '::1'))).toBe(
      nonPublic('hooks.example'),
    );
  });

  it('refuses localhost, a name the system resolver maps to loopback', async () => {
    expect(await refusal('https://localhost/hook')).toBe(nonPublic('localhost'));
    expect(await refusal('https://LOCALHOST:8443/hook')).toBe(nonPublic('localhost'));
  });

  it('refuses non-public IP literals in every form WHATWG URL normalises', async () => {
    const literals: [string, string][] = [
      ['https://127.0.0.1/', '127.0.0.1'],
      ['https://2130706433/', '127.0.0.1'],
      ['https://0x7f000001/', '127.0.0.1'],
      ['https://0x7F.0x0.0x0.0x1/', '127.0.0.1'],
      ['https://017700000001/', '127.0.0.1'],
      ['https://0177.0.0.01/', '127.0.0.1'],
      ['https://127.1/', '127.0.0.1'],
      ['https://127.0.0.1./', '127.0.0.1'],
      ['https://0/', '0.0.0.0'],
      ['https://167772161/', '10.0.0.1'],
      ['https://169.254.169.254/latest/meta-data/', '169.254.169.254'],
      ['https://0xa9fea9fe/', '169.254.169.254'],
      ['https://[::1]/', '::1'],
      ['https://[0:0:0:0:0:0:0:1]/', '::1'],
      ['https://[::]/', '::'],
      ['https://[::ffff:127.0.0.1]/', '::ffff:7f00:1'],
      ['https://[::ffff:7f00:1]/', '::ffff:7f00:1'],
      ['https://[::ffff:169.254.169.254]/', '::ffff:a9fe:a9fe'],
      ['https://[64:ff9b::127.0.0.1]/', '64:ff9b::7f00:1'],
      ['https://[fe80::1]/', 'fe80::1'],
      ['https://[fd00::1]:8443/', 'fd00::1'],
    ];
    for (const [url, host] of literals) expect([url, await refusal(url)]).toEqual([url, nonPublic(host)]);
    // A zone index is no part of a WHATWG URL: not a URL at all.
    expect(await refusal('https://[fe80::1%25eth0]/')).toBe('url must be an absolute URL');
  });

  it('requires https, an absolute URL, no credentials and no fragment', async () => {
    const resolve = answering('93.184.215.14');
    const cases: [string, string][] = [
      ['http://hooks.example/', 'url must be an https:// URL'],
      ['ftp://hooks.example/', 'url must be an https:// URL'],
      ['javascript:alert(1)', 'url must be an https:// URL'],
      ['file:///etc/passwd', 'url must be an https:// URL'],
      ['hooks.example/plants', 'url must be an absolute URL'],
      ['/plants', 'url must be an absolute URL'],
      ['https://', 'url must be an absolute URL'],
      ['https://user:pass@hooks.example/', 'url must not contain credentials'],
      ['https://user@hooks.example/', 'url must not contain credentials'],
      ['https://:pass@hooks.example/', 'url must not contain credentials'],
      ['https://hooks.example/#top', 'url must not contain a fragment'],
      ['https://hooks.example/#', 'url must not contain a fragment'],
    ];
    for (const [url, message] of cases)
      expect([url, await refusal(url, STRICT, resolve)]).toEqual([url, message]);
  });

  it('refuses a host that does not resolve, with a clear message', async () => {
    expect(await refusal('https://nowhere.example/', STRICT, notFound)).toBe(
      'url: the host nowhere.example could not be resolved',
    );
    expect(await refusal('https://nowhere.example/', STRICT, answering())).toBe(
      'url: the host nowhere.example could not be resolved',
    );
  });

  it('does not wait on a name server that never answers', async () => {
    const never: Resolve = () => new Promise(() => {});
    const started = performance.now();
    const refused = checkEndpointUrl('https://slow.example/', STRICT, never, 100);
    await expect(refused).rejects.toThrow(
      new UnsafeUrlError('url: the host slow.example could not be resolved within 0.1 s'),
    );
    expect(performance.now() - started).toBeLessThan(5_000);
  });

  describe('with allowPrivate (WEBHOOK_ALLOW_PRIVATE_URLS=1)', () => {
    it('accepts http and non-public addresses', async () => {
      for (const url of [
        'http://127.0.0.1:3000/hook',
        'http://localhost/hook',
        'https://[::1]/',
        'http://2130706433/',
        'http://169.254.169.254/',
      ]) {
        expect([url, await refusal(url, PRIVATE_ALLOWED)]).toEqual([url, undefined]);
      }
      expect(await refusal('http://hooks.internal/', PRIVATE_ALLOWED, answering('10.1.2.3'))).toBeUndefined();
    });

    it('keeps every other rule', async () => {
      expect(await refusal('ftp://127.0.0.1/', PRIVATE_ALLOWED)).toBe(
        'url must be an https:// or http:// URL',
      );
      expect(await refusal('http://u:p@127.0.0.1/', PRIVATE_ALLOWED)).toBe(
        'url must not contain credentials',
      );
      expect(await refusal('http://127.0.0.1/#x', PRIVATE_ALLOWED)).toBe('url must not contain a fragment');
      expect(await refusal('http://nowhere.example/', PRIVATE_ALLOWED, notFound)).toBe(
        'url: the host nowhere.example could not be resolved',
      );
    });
  });
});
