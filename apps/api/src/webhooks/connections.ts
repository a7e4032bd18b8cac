import { isIP } from 'node:net';
import { Agent, buildConnector, type Dispatcher } from 'undici';
import {
  guardedLookup,
  isAllowedAddress,
  RefusedAddressError,
  type Resolve,
  type UrlPolicy,
} from './ssrf.ts';

// The worker imports this module when it first has a subscriber: a deployment without webhooks
// never loads undici (about 30 ms of start-up, and 18 MiB in a bare process).

/**
 * The connections one subscriber's attempts go over, kept open between attempts (the worker's
 * `concurrency` bounds how many). undici's rather than node:http's: node:http's client copies each
 * request's options twice into objects without prototype, and an attempt cost 24 us of client CPU
 * through it against 14 us through undici (a bench on loopback: bench/README.md).
 *
 * `guard`: the subscriber is a third party (a registered endpoint), so a connection may go only to
 * a public address unless `guard.allowPrivate` (see ssrf.ts), checked before anything connects: a
 * host name's every address, by the guarded lookup (through `resolveHost`, which stands in for DNS
 * in tests), and an IP literal, which no lookup sees. Without a guard: an operator's
 * `WEBHOOK_URLS`, trusted as configured.
 * `timeoutMs` bounds opening a connection, as it bounds an attempt.
 */
export function openConnections({
  guard,
  resolveHost,
  timeoutMs,
}: {
  guard?: UrlPolicy;
  resolveHost?: Resolve;
  timeoutMs: number;
}): Dispatcher {
  const connect = buildConnector({
    timeout: timeoutMs,
    ...(guard && { lookup: guardedLookup(guard, resolveHost) }),
  });
  return new Agent({
    // The attempt's own timer bounds the answer (see sendDelivery).
    headersTimeout: 0,
    bodyTimeout: 0,
    connect: guard
      ? (options, callback) => {
          const { hostname } = options;
          if (isIP(hostname) !== 0 && !isAllowedAddress(guard, hostname)) {
            callback(new RefusedAddressError(hostname), null);
            return;
          }
          connect(options, callback);
        }
      : connect,
  });
}
