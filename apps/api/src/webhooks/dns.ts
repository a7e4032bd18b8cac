import { type LookupAddress, promises as dns } from 'node:dns';
import { isIP } from 'node:net';
import type { EndpointDnsConfig } from '../config/config.ts';
import { createLookupSlots, type LookupSlots, type Release } from './lookup-slots.ts';

/** Every address a host name resolves to. Tests stand in for DNS with their own. */
export type Resolve = (hostname: string) => Promise<LookupAddress[]>;

/**
 * `localhost` and `*.localhost` (RFC 6761 §6.3): loopback, asked of no name server. Not public, so
 * refused unless WEBHOOK_ALLOW_PRIVATE_URLS=1.
 */
const LOOPBACK: LookupAddress[] = [
  { address: '127.0.0.1', family: 4 },
  { address: '::1', family: 6 },
];

/** A lookup cut short at its time bound; checkEndpointUrl says so in its answer. */
export class LookupTimeoutError extends Error {
  override name = 'LookupTimeoutError';
  readonly code = 'ETIMEOUT';
}

/**
 * Every address of `hostname` from DNS (A and AAAA) through c-ares, which waits on sockets in the
 * event loop: unlike `dns.lookup` it takes no thread of libuv's small pool (which the SQLite store's
 * syncs, the operator's WEBHOOK_URLS and PostgreSQL's host names need), and it can be cancelled.
 * Each lookup has a resolver of its own, cancelled at `timeoutMs`. IP literals and localhost need
 * no lookup. DNS only: /etc/hosts is not read, so a third party's name cannot reach what it names.
 */
export function caresResolve({
  servers,
  timeoutMs,
}: Pick<EndpointDnsConfig, 'servers' | 'timeoutMs'>): Resolve {
  return async (hostname) => {
    const family = isIP(hostname);
    if (family !== 0) return [{ address: hostname, family }];
    const name = hostname.toLowerCase().replace(/\.$/, '');
    if (name === 'localhost' || name.endsWith('.localhost')) return LOOPBACK;
    // A second try halfway, so one lost datagram does not fail the lookup; c-ares lengthens the
    // second try's wait, so a server that never answers is cut by the timer below, at the bound.
    const resolver = new dns.Resolver({ timeout: Math.max(1, Math.floor(timeoutMs / 2)), tries: 2 });
    if (servers) resolver.setServers(servers);
    let late = false;
    const timer = setTimeout(() => {
      late = true;
      resolver.cancel();
    }, timeoutMs);
    try {
      const [v4, v6] = await Promise.allSettled([resolver.resolve4(name), resolver.resolve6(name)]);
      if (late) throw new LookupTimeoutError(`lookup of ${name} cut at ${timeoutMs} ms`);
      const addresses = [
        ...(v4.status === 'fulfilled' ? v4.value.map((address) => ({ address, family: 4 })) : []),
        ...(v6.status === 'fulfilled' ? v6.value.map((address) => ({ address, family: 6 })) : []),
      ];
      if (addresses.length > 0) return addresses;
      const codes = [v4, v6].map((result) =>
        result.status === 'rejected' ? (result.reason as NodeJS.ErrnoException).code : undefined,
      );
      if (codes.includes('ETIMEOUT')) throw new LookupTimeoutError(`lookup of ${name} timed out`);
      // ENODATA for both families: the name exists without addresses, as good as not found.
      throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), {
        code: codes.find((code) => code !== undefined) ?? 'ENOTFOUND',
      });
    } finally {
      clearTimeout(timer);
    }
  };
}

/** Endpoints' lookups, bounded by the caps of `EndpointDnsConfig`. */
export type EndpointResolver = {
  /** For a registration: throws `LookupsBusyError` at once when no slot is free. */
  forRegistration(owner: string): Resolve;
  /** For a delivery's connection: waits its turn for a slot (its attempt's timeout bounds the wait). */
  forDelivery(owner: string): Resolve;
};

/**
 * `caresResolve` under the caps per token and per instance. Lookups of a name already in flight
 * join it and take no slot: an endpoint's concurrent attempts cost one lookup.
 */
export function createEndpointResolver(config: EndpointDnsConfig): EndpointResolver {
  const resolve = caresResolve(config);
  const slots: LookupSlots = createLookupSlots({
    total: config.concurrency,
    perOwner: config.perTokenConcurrency,
  });
  const inFlight = new Map<string, Promise<LookupAddress[]>>();

  function bounded(owner: string, slot: (owner: string) => Release | Promise<Release>): Resolve {
    return async (hostname) => {
      const name = hostname.toLowerCase();
      const needsLookup = isIP(name) === 0 && !/(^|\.)localhost\.?$/.test(name);
      if (!needsLookup) return resolve(name);
      const joined = inFlight.get(name);
      if (joined) return joined;
      const release = await slot(owner);
      // While this waited for a slot, another may have started the same lookup.
      const started = inFlight.get(name);
      if (started) {
        release();
        return started;
      }
      const lookup = resolve(name).finally(() => {
        inFlight.delete(name);
        release();
      });
      inFlight.set(name, lookup);
      return lookup;
    };
  }

  return {
    forRegistration: (owner) => bounded(owner, slots.take),
    forDelivery: (owner) => bounded(owner, slots.wait),
  };
}
