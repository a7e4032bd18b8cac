import type { Dispatcher } from 'undici';
import type { Delivery } from '../store/contract.ts';
import type { Breaker } from './breaker.ts';
import type { Signer } from './send.ts';

/** Most subscriber URLs (and, besides, most registered endpoints) one round of claims serves. */
export const MAX_SUBSCRIBERS = 1_000;
/** Subscribers claimed for in one write (`claimEach`): 1,000 endpoints make 16 writes a round, not 1,000. */
export const CLAIMS_PER_WRITE = 64;
/**
 * Most deliveries one subscriber holds (claimed and not yet recorded: queued, being attempted, or
 * their outcome being written). Claiming many at once keeps up with creates, though each claim is a
 * write that waits for a commit; the bound keeps memory bounded.
 */
export const HELD_PER_SUBSCRIBER = 512;
/**
 * Most attempts in flight to all subscribers together, each on its own connection: with many
 * subscribers each gets an equal share of these rather than its `concurrency`. 1,000 endpoints × 32
 * slots opened more sockets than the process may have files (20,000 here) and the store, out of
 * file descriptors, failed (issue 42's bench); an equal share keeps dead endpoints from holding the
 * healthy ones' slots.
 */
export const ATTEMPTS_IN_ALL = 2_048;
/** Most deliveries all subscribers hold together, beyond each one's `concurrency` (which it always gets). */
export const HELD_IN_ALL = 4_096;
/**
 * How long a subscriber with nothing pending is kept (its connections open, as long as its receiver
 * keeps them): a delivery every few seconds goes over the connection the last one opened.
 */
export const FORGET_AFTER_MS = 30_000;

/** A claimed delivery waiting for a slot, and the latest time (`performance.now()`) its attempt may start. */
export type Queued = { delivery: Delivery; startBy: number };

/**
 * This process's view of one subscriber: an operator URL or a registered endpoint. What it holds,
 * its attempts in flight and its circuit breaker.
 */
export type Subscriber = {
  /** The operator URL, or the endpoint's id: what its deliveries are claimed by, and its key here. */
  target: { url: string } | { endpointId: string };
  /**
   * What logs say of it: the URL's origin (its path and query can hold a secret, as Slack's do) and
   * the endpoint's id, or for an operator URL a digest of it (see `urlDigest`).
   */
  shown: { url: string; endpointId: string } | { url: string; urlDigest: string };
  /** Signs its attempts: the operator secret, or the endpoint's secrets as last read. */
  sign: Signer;
  /** A registered endpoint's sealed secrets that `sign` was made from. */
  secrets?: string;
  /**
   * Its kept-alive connections (connections.ts): a registered endpoint's resolve its host within
   * its owner's lookup caps and go to public addresses only; closed when it is forgotten.
   */
  connections: Dispatcher;
  /** When (`performance.now()`) an attempt last started: it is forgotten only after `FORGET_AFTER_MS` idle. */
  lastUsed: number;
  /** Claimed deliveries not yet attempted, oldest due first. */
  queue: Queued[];
  /** Claimed deliveries whose outcome is not yet recorded (the queue's included). */
  held: number;
  inFlight: number;
  breaker: Breaker;
  /** The last claim took all it asked for, or could ask for none: more may be due, so a drained queue starts a round. */
  saturated: boolean;
};
