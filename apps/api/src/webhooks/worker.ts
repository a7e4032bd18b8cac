import { setTimeout as sleep } from 'node:timers/promises';
import { describeCauses } from '../causes.ts';
import type { Delivery, StoredEndpoint } from '../store/contract.ts';
import { startAttemptSpan } from '../tracing/delivery.ts';
import { createBreaker } from './breaker.ts';
import { endpointSigner, withheld } from './endpoints.ts';
import type { openConnections } from './connections.ts';
import { batched, wakeableNaps } from './naps.ts';
import { outcomeRecorder } from './outcomes.ts';
import { outboxExpiry, startOutboxRetention } from './retention.ts';
import { AttemptCut, redactUrl, sendDelivery, urlDigest, webhookSigner } from './send.ts';
import {
  ATTEMPTS_IN_ALL,
  CLAIMS_PER_WRITE,
  FORGET_AFTER_MS,
  HELD_IN_ALL,
  HELD_PER_SUBSCRIBER,
  MAX_SUBSCRIBERS,
  type Subscriber,
} from './subscriber.ts';
import type { DeliveryWorker, DeliveryWorkerOptions } from './worker-options.ts';

export type { DeliveryWorker, DeliveryWorkerOptions } from './worker-options.ts';

/**
 * Drains the webhook outbox, one subscriber at a time so that none can starve another: each
 * operator URL and each registered endpoint (even two with the same URL) gets its own `concurrency`
 * slots (an equal share of `ATTEMPTS_IN_ALL` when less) and breaker (breaker.ts), and its due deliveries are
 * claimed on their own (leased, so several instances never attempt one delivery at the same time).
 * A claim takes up to `HELD_PER_SUBSCRIBER` deliveries, which wait in a local queue for a slot; one
 * that could not end within its lease is handed back (`release`) instead of attempted, and so are
 * the queued ones when the URL's last attempt failed or the worker stops: they keep their attempts.
 * A failing URL gets one attempt a round; an open breaker, none. Records outcomes (outcomes.ts).
 * Polls every `pollIntervalMs`, and at once when a subscriber that had more due has room again.
 * Prunes, and fails what an open breaker held back for longer than the schedule (retention.ts).
 */
export function startDeliveryWorker({
  outbox,
  config,
  log,
  metrics,
  endpoints,
  tracer,
}: DeliveryWorkerOptions): DeliveryWorker {
  // Without WEBHOOK_SECRET there are no operator subscribers: their deliveries (from an earlier
  // configuration) wait. Without a secrets key, endpoints' deliveries wait likewise.
  const operatorSign = config.secret === undefined ? undefined : webhookSigner(config.secret);
  const box = endpoints?.settings.box;
  const stopping = new AbortController();
  const abandon = new AbortController();
  // Each attempt has its own cut (lighter than an AbortController), cut by this one listener:
  // thousands of attempts on the shared signal would each add a listener (and Node warns past 10).
  const attemptsInFlight = new Set<AttemptCut>();
  abandon.signal.addEventListener('abort', () => {
    for (const cut of attemptsInFlight) cut.abort();
  });
  /** Attempts, and writes of outcomes and releases, still running. */
  const busy = new Set<Promise<unknown>>();
  const track = (promise: Promise<unknown>) => {
    busy.add(promise);
    promise.finally(() => busy.delete(promise)).catch(() => {});
  };
  const subscribers = new Map<string, Subscriber>();
  /** Loaded when there is first something to deliver (see connections.ts). */
  let connections: typeof import('./connections.ts') | undefined;
  let heldInAll = 0;
  /** Each subscriber's slots: `concurrency`, or an equal share of `ATTEMPTS_IN_ALL` when that is less. */
  const slots = () =>
    Math.min(config.concurrency, Math.max(1, Math.floor(ATTEMPTS_IN_ALL / Math.max(1, sharing))));
  let failingClaims: Promise<void> | undefined;
  let sharing = 0; // How many share them: those known, or (in a round) those with deliveries pending.
  const record = outcomeRecorder(outbox, config, log, metrics);
  const expiry = outboxExpiry(outbox, config, log, stopping.signal, metrics);
  const release = batched((claims: Delivery[]) => outbox.release(claims));
  // A saturated subscriber with room again ends the nap (or skips the next one) so the next round starts.
  let woken = false;
  const naps = wakeableNaps(stopping.signal);
  const wake = () => {
    woken = true;
    naps.wake();
  };

  function subscriber(
    key: string,
    make: (
      open: typeof openConnections,
    ) => Pick<Subscriber, 'target' | 'shown' | 'sign' | 'secrets' | 'connections'>,
  ): Subscriber {
    let known = subscribers.get(key);
    if (!known) {
      known = {
        ...make(connections!.openConnections),
        lastUsed: performance.now(),
        queue: [],
        held: 0,
        inFlight: 0,
        breaker: createBreaker(config.breaker),
        saturated: false,
      };
      subscribers.set(key, known);
    }
    return known;
  }

  function unhold(to: Subscriber, count: number): void {
    to.held -= count;
    heldInAll -= count;
    if (to.saturated && (to.held <= HELD_PER_SUBSCRIBER / 2 || to.queue.length === 0)) wake();
  }

  function countOpenCircuits(): void {
    let open = 0;
    for (const known of subscribers.values()) if (known.breaker.state() !== 'closed') open += 1;
    metrics?.webhookCircuitsOpen.set(open);
  }

  /** Hands these claimed deliveries back unattempted. */
  function handBack(to: Subscriber, deliveries: Delivery[]): void {
    if (deliveries.length === 0) return;
    track(
      Promise.all(deliveries.map((delivery) => release(delivery)))
        .catch((error) => {
          // Not handed back: due again once their leases end, with the attempt counted.
          log.warn({ ...to.shown, reason: describeCauses(error) }, 'webhook deliveries not released');
        })
        .finally(() => unhold(to, deliveries.length)),
    );
  }

  /** Starts queued deliveries while slots and the breaker allow; hands back what it must not attempt. */
  function pump(to: Subscriber): void {
    const now = performance.now();
    const stale: Delivery[] = [];
    while (to.queue.length > 0 && !stopping.signal.aborted) {
      if (to.breaker.allowed(slots() - to.inFlight) <= 0) break;
      const { delivery, startBy } = to.queue.shift()!;
      // It could outlive its lease, and another claim may already have it.
      if (now > startBy) stale.push(delivery);
      else track(attempt(delivery, to));
    }
    // A failing subscriber (see claimLimit) keeps nothing queued: it waits for a later round.
    if (stopping.signal.aborted || to.breaker.failing()) {
      stale.push(...to.queue.map((queued) => queued.delivery));
      to.queue = [];
    }
    handBack(to, stale);
  }

  async function attempt(delivery: Delivery, to: Subscriber): Promise<void> {
    const settle = to.breaker.start();
    to.inFlight += 1;
    const started = performance.now();
    to.lastUsed = started;
    const cut = new AttemptCut();
    attemptsInFlight.add(cut);
    if (abandon.signal.aborted) cut.abort();
    const span = tracer && startAttemptSpan(tracer, delivery);
    const outcome = await sendDelivery(delivery, {
      connections: to.connections,
      sign: to.sign,
      timeoutMs: config.timeoutMs,
      abort: cut,
      headers: { ...span?.headers, 'webhook-event': delivery.endpoint?.event ?? 'plant.created' },
    });
    span?.end(outcome);
    attemptsInFlight.delete(cut);
    const ms = Math.round(performance.now() - started);
    to.inFlight -= 1;
    const about = { webhookId: delivery.id, ...to.shown, attempt: delivery.attempts };
    const transition = settle(outcome.ok || (outcome.abandoned ? undefined : false));
    if (transition === 'opened') {
      log.warn(
        { ...to.shown, failures: config.breaker.failures, retryInMs: config.breaker.cooldownMs },
        'webhook subscriber circuit opened',
      );
    } else if (transition === 'closed') {
      log.info(to.shown, 'webhook subscriber circuit closed');
    }
    if (transition) countOpenCircuits();
    // The slot is free while the outcome is written.
    pump(to);
    try {
      await record(delivery, outcome, about, ms);
    } catch (error) {
      // Not recorded: the lease runs out and the delivery is attempted again (at least once).
      log.warn({ ...about, reason: describeCauses(error) }, 'webhook outcome not recorded');
    } finally {
      unhold(to, 1);
    }
  }

  /** How many deliveries to claim for `to` now. */
  function claimLimit(to: Subscriber): number {
    const free = Math.max(0, slots() - to.inFlight - to.queue.length);
    // Failing (its last attempt failed) or half-open: one attempt a round, and only once nothing
    // claimed is waiting, so that a dead subscriber's retries cost a claim and an attempt a round,
    // not a hot loop of `concurrency` slots (issue 42).
    if (to.breaker.failing()) return to.queue.length > 0 ? 0 : to.breaker.allowed(Math.min(1, free));
    const room = Math.min(HELD_PER_SUBSCRIBER - to.held, HELD_IN_ALL - heldInAll);
    return Math.max(room, free);
  }

  /** Hands back what this process holds for an endpoint it must not send to now. */
  function handBackAll(id: string): void {
    const known = subscribers.get(id);
    if (known) {
      handBack(
        known,
        known.queue.map((queued) => queued.delivery),
      );
      known.queue = [];
    }
  }

  /**
   * The subscriber of registered endpoint `id` with its secrets as the round read them (so a
   * rotation is seen within a round), or `undefined` when it no longer exists (then what was
   * enqueued for it as it was deleted is deleted too) or must get nothing (`withheld`): then what
   * this process holds for it is handed back.
   */
  async function endpointSubscriber(
    id: string,
    endpoint: StoredEndpoint | undefined,
  ): Promise<Subscriber | undefined> {
    if (endpoint === undefined) {
      handBackAll(id);
      await outbox.discardOrphans(id);
      return undefined;
    }
    if (await withheld(endpoint, endpoints!, log)) {
      handBackAll(id);
      return undefined;
    }
    // The secrets are opened (decrypted) only when they changed since the last round: a rotation.
    const secrets = `${endpoint.secret} ${endpoint.previousSecret} ${endpoint.previousSecretExpiresAt?.getTime()}`;
    const signer = () => endpointSigner(endpoint, box!);
    const { policy: guard, resolver } = endpoints!.settings;
    const to = subscriber(id, (open) => ({
      target: { endpointId: id },
      shown: { url: redactUrl(endpoint.url), endpointId: id },
      sign: signer(),
      secrets,
      connections: open({
        guard,
        resolveHost: resolver.forDelivery(endpoint.owner),
        timeoutMs: config.timeoutMs,
      }),
    }));
    if (to.secrets !== secrets) {
      to.sign = signer();
      to.secrets = secrets;
    }
    return to;
  }

  /** Claims, for each subscriber with pending deliveries, as many as it has room for. */
  async function claimRound(): Promise<void> {
    let keys: string[];
    try {
      const [urls, endpointIds] = await Promise.all([
        operatorSign ? outbox.pendingUrls({ limit: MAX_SUBSCRIBERS }) : [],
        box ? outbox.pendingEndpoints({ limit: MAX_SUBSCRIBERS }) : [],
      ]);
      keys = [...urls, ...endpointIds];
    } catch (error) {
      log.warn({ reason: describeCauses(error) }, 'webhook outbox unavailable');
      return;
    }
    if (keys.length > 0) connections ??= await import('./connections.ts');
    // Every endpoint of the round in one read, not one read each.
    let read: Map<string, StoredEndpoint>;
    try {
      const ids = keys.filter((key) => !key.includes('://'));
      read = ids.length > 0 ? await endpoints!.store.getMany(ids) : new Map();
    } catch (error) {
      log.warn({ reason: describeCauses(error) }, 'webhook endpoints not readable');
      return;
    }
    sharing = Math.max(subscribers.size, keys.length);
    // Operator URLs contain "://", endpoint ids never do: one map holds both.
    /** The subscriber of `key` with the deliveries it may claim now held for it, if any. */
    const wanting = async (key: string) => {
      let to: Subscriber | undefined;
      try {
        to = key.includes('://')
          ? subscriber(key, (open) => ({
              target: { url: key },
              shown: { url: redactUrl(key), urlDigest: urlDigest(key) },
              sign: operatorSign!,
              connections: open({ timeoutMs: config.timeoutMs }),
            }))
          : await endpointSubscriber(key, read.get(key));
      } catch (error) {
        log.warn({ endpointId: key, reason: describeCauses(error) }, 'webhook endpoint not readable');
        return undefined;
      }
      if (to === undefined) return undefined;
      const limit = claimLimit(to);
      to.saturated = limit === 0 && !to.breaker.failing();
      if (limit === 0 || stopping.signal.aborted) return undefined;
      to.held += limit;
      heldInAll += limit;
      return { to, limit };
    };
    /** Claims for the subscribers of `of` in one write, queueing what each got. */
    const claimTogether = async (of: string[]) => {
      const wanted = (await Promise.all(of.map(wanting))).filter((one) => one !== undefined);
      if (wanted.length === 0) return;
      // Measured before the claim, so before the store starts the lease.
      const startBy = performance.now() + config.leaseMs - config.timeoutMs;
      const claims = wanted.map(({ to, limit }) => ({ ...to.target, limit }));
      const claimed = await outbox.claimEach(claims, config.leaseMs).catch((error) => {
        log.warn({ reason: describeCauses(error) }, 'webhook outbox unavailable');
        return wanted.map((): Delivery[] => []);
      });
      for (const [n, { to, limit }] of wanted.entries()) {
        const got = claimed[n]!;
        unhold(to, limit - got.length);
        for (const delivery of got) to.queue.push({ delivery, startBy });
        // A full claim means more may be due (a failing subscriber's one attempt a round is one, whatever is due).
        to.saturated = got.length === limit && !to.breaker.failing();
        pump(to);
      }
    };
    /** Claims for `of`, CLAIMS_PER_WRITE subscribers a write, `claimsAtOnce` writes at a time. */
    const inBatches = async (of: string[]) => {
      const writes: string[][] = [];
      for (let i = 0; i < of.length; i += CLAIMS_PER_WRITE) writes.push(of.slice(i, i + CLAIMS_PER_WRITE));
      for (let i = 0; i < writes.length; i += outbox.claimsAtOnce)
        await Promise.all(writes.slice(i, i + outbox.claimsAtOnce).map(claimTogether));
    };
    // Failing subscribers' claims run on a chain of their own that the round does not wait for.
    const failing = new Set(keys.filter((key) => subscribers.get(key)?.breaker.failing()));
    const expiring = expiry.expire([...failing].map((key) => subscribers.get(key)!));
    if (expiring) track(expiring);
    if (!failingClaims) {
      failingClaims = inBatches([...failing]).finally(() => {
        failingClaims = undefined;
      });
      track(failingClaims);
    }
    await inBatches(keys.filter((key) => !failing.has(key)));
    const pending = new Set(keys);
    // An endpoint whose claimed deliveries are no longer pending in the store was deleted or
    // disabled (with them): what this process still queues for it is not sent.
    for (const [key, known] of subscribers) {
      if (!pending.has(key) && 'endpointId' in known.target && known.queue.length > 0) {
        await endpoints!.store
          .get(key)
          .then((endpoint) => endpointSubscriber(key, endpoint))
          .catch(() => {});
      }
    }
    // Forget idle subscribers with nothing pending; an open breaker is kept until it closes.
    const idleSince = performance.now() - FORGET_AFTER_MS;
    for (const [key, known] of subscribers) {
      if (
        !pending.has(key) &&
        known.held === 0 &&
        known.breaker.state() === 'closed' &&
        known.lastUsed < idleSince
      ) {
        subscribers.delete(key);
        known.connections.close().catch(() => {});
      }
    }
  }

  async function run(): Promise<void> {
    while (!stopping.signal.aborted) {
      woken = false;
      await claimRound();
      if (woken) continue;
      await naps.nap(config.pollIntervalMs);
    }
  }

  const running = run();
  const retention = startOutboxRetention(outbox, config, log);
  return {
    async stop(graceMs) {
      stopping.abort();
      await Promise.all([running, failingClaims, retention.stop()]);
      // Claimed but not started: handed back at once, their attempts uncounted.
      for (const to of subscribers.values()) pump(to);
      const grace = new AbortController();
      await Promise.race([
        Promise.allSettled(busy),
        sleep(graceMs, undefined, { signal: grace.signal }).catch(() => {}),
      ]);
      grace.abort();
      abandon.abort();
      // Outcomes, abandoned attempts and releases are written before the store closes.
      while (busy.size > 0) await Promise.allSettled(busy);
      // No attempt is left to use them (nor a connection still being opened for one cut short).
      await Promise.allSettled([...subscribers.values()].map((known) => known.connections.destroy()));
    },
  };
}
