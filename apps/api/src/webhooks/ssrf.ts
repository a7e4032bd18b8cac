import type { LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';
import { caresResolve, LookupTimeoutError, type Resolve } from './dns.ts';
import { LookupsBusyError } from './lookup-slots.ts';

/**
 * Where a third party's endpoint may point. Third parties choose the URL the service connects to
 * (server-side request forgery): by default only public addresses over https. `allowPrivate`
 * (`WEBHOOK_ALLOW_PRIVATE_URLS=1`, for development and tests) lifts the address and https rules.
 */
export type UrlPolicy = { allowPrivate: boolean };

/** A URL refused at registration; its message is fit for a 400 answer. */
export class UnsafeUrlError extends Error {
  override name = 'UnsafeUrlError';
}

export type { Resolve };

/** How long registration waits for the host to resolve, by default (WEBHOOK_DNS_TIMEOUT_MS). */
export const RESOLVE_TIMEOUT_MS = 5_000;

/** DNS through c-ares with the system's name servers and no caps (see dns.ts): the default here. */
const defaultResolve = caresResolve({ servers: undefined, timeoutMs: RESOLVE_TIMEOUT_MS });

/** 2000::/3, the only IPv6 addresses assigned for global unicast: the rest is special or unassigned. */
const GLOBAL_UNICAST = ipaddr.parseCIDR('2000::/3');
/**
 * IPv6 forms whose last 32 bits are the IPv4 address actually reached: IPv4-mapped (the kernel
 * connects over IPv4), IPv4-compatible (deprecated; ipaddr.js reads `::a.b.c.d` as mapped anyway)
 * and NAT64's well-known prefix (RFC 6052: a gateway forwards 64:ff9b::a.b.c.d to a.b.c.d).
 */
const EMBEDDING_IPV4 = ['::ffff:0:0/96', '::/96', '64:ff9b::/96'].map((cidr) => ipaddr.parseCIDR(cidr));

/**
 * Whether `ip` (as a resolver or a socket gives it) is a public unicast address. ipaddr.js names
 * every special range (loopback, private, link-local, unique-local, CGNAT, multicast, broadcast,
 * reserved, documentation, benchmarking, …) and calls the rest 'unicast'. An IPv6 address carrying
 * an IPv4 one (above) is judged by that IPv4 address (so :: and ::1 fall in 0.0.0.0/8). 6to4 and
 * Teredo (tunnels to an embedded IPv4, the first deprecated, the second obsolete) and all outside
 * 2000::/3 are refused whole.
 */
export function isPublicAddress(ip: string): boolean {
  if (isIP(ip) === 0) return false;
  const address = ipaddr.parse(ip);
  if (address.kind() === 'ipv4') return address.range() === 'unicast';
  const v6 = address as ipaddr.IPv6;
  if (EMBEDDING_IPV4.some((range) => v6.match(range))) {
    return isPublicAddress(ipaddr.fromByteArray(v6.toByteArray().slice(12)).toString());
  }
  return v6.match(GLOBAL_UNICAST) && v6.range() === 'unicast';
}

/** Whether `policy` lets a connection go to `ip`: a public address, or any with `allowPrivate`. */
export function isAllowedAddress(policy: UrlPolicy, ip: string): boolean {
  return policy.allowPrivate || isPublicAddress(ip);
}

/**
 * The part of registration's check that needs no lookup: an absolute http(s) URL without
 * credentials (they would be sent and shown) or fragment (never sent: a sign of a mistake), https
 * unless `allowPrivate`. Any port. Returns the host as a resolver takes it; throws `UnsafeUrlError`.
 */
export function parseEndpointUrl(url: string, policy: UrlPolicy): string {
  if (!URL.canParse(url)) throw new UnsafeUrlError('url must be an absolute URL');
  const parsed = new URL(url);
  if (policy.allowPrivate) {
    if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') {
      throw new UnsafeUrlError('url must be an https:// or http:// URL');
    }
  } else if (parsed.protocol !== 'https:') {
    throw new UnsafeUrlError('url must be an https:// URL');
  }
  if (parsed.username || parsed.password) throw new UnsafeUrlError('url must not contain credentials');
  // `href` keeps the `#` even of an empty fragment.
  if (parsed.href.includes('#')) throw new UnsafeUrlError('url must not contain a fragment');
  return hostOf(parsed);
}

/**
 * Registration's check of an endpoint URL: `parseEndpointUrl`'s rules, and a host that resolves, to
 * public addresses only unless `allowPrivate`. Throws `UnsafeUrlError`, or `LookupsBusyError` from
 * `resolve` when its lookups are at their cap. Delivery checks the address again when it connects
 * (see send.ts): DNS can answer differently later.
 */
export async function checkEndpointUrl(
  url: string,
  policy: UrlPolicy,
  resolve: Resolve = defaultResolve,
  timeoutMs = RESOLVE_TIMEOUT_MS,
): Promise<void> {
  const host = parseEndpointUrl(url, policy);
  let addresses: LookupAddress[] | 'late';
  let timer: NodeJS.Timeout | undefined;
  try {
    const late = new Promise<'late'>((settle) => {
      timer = setTimeout(() => settle('late'), timeoutMs);
    });
    addresses = await Promise.race([resolve(host), late]);
  } catch (error) {
    if (error instanceof LookupsBusyError) throw error;
    addresses = error instanceof LookupTimeoutError ? 'late' : [];
  } finally {
    clearTimeout(timer);
  }
  if (addresses === 'late') {
    throw new UnsafeUrlError(`url: the host ${host} could not be resolved within ${timeoutMs / 1000} s`);
  }
  if (addresses.length === 0) throw new UnsafeUrlError(`url: the host ${host} could not be resolved`);
  if (!addresses.every(({ address }) => isAllowedAddress(policy, address))) {
    // The address itself is not named: that would tell a third party what internal names resolve to.
    throw new UnsafeUrlError(
      `url: the host ${host} resolves to a non-public address (loopback, private, link-local or reserved); endpoints must be publicly reachable`,
    );
  }
}

/** A connection refused because its address is not public. */
export class RefusedAddressError extends Error {
  override name = 'RefusedAddressError';
  constructor(host: string) {
    super(`refused: ${host} resolved to a non-public address`);
  }
}

/**
 * The `lookup` of a delivery's connection: resolves with `resolve` and, unless `allowPrivate`,
 * fails with `RefusedAddressError` when any address is not public, so the socket never connects.
 * The registration check is not enough: DNS may answer otherwise by now (rebinding).
 */
export function guardedLookup(policy: UrlPolicy, resolve: Resolve = defaultResolve): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname).then(
      (all) => {
        if (!all.every(({ address }) => isAllowedAddress(policy, address))) {
          callback(new RefusedAddressError(hostname), '');
          return;
        }
        // Deliveries set no address family: every address is a candidate (happy eyeballs).
        const [first] = all;
        if (!first)
          callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), '');
        else if (options.all) callback(null, all);
        else callback(null, first.address, first.family);
      },
      (error: NodeJS.ErrnoException) => callback(error, ''),
    );
  };
}

/** The host of a URL as a resolver takes it: an IPv6 literal without its brackets. */
export function hostOf(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1');
}
