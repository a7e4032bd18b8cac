/** What a subscriber's breaker lets through: everything, nothing (cooling down), or one trial attempt. */
export type BreakerState = 'closed' | 'open' | 'half-open';

export type Breaker = {
  /** The state now: an open breaker turns half-open once its cooldown has passed. */
  state(): BreakerState;
  /** Whether its last attempt failed (or it is not closed): its claims wait behind the others'. */
  failing(): boolean;
  /** How many of `free` slots may start an attempt now: all while closed, one trial while half-open. */
  allowed(free: number): number;
  /**
   * Call as an attempt starts; call what it returns with the attempt's result (`undefined`: it said
   * nothing about the subscriber, e.g. abandoned at shutdown). Returns the transition it caused, if any.
   */
  start(): (ok: boolean | undefined) => 'opened' | 'closed' | undefined;
};

/**
 * A circuit breaker over consecutive failed attempts: after `failures` in a row it opens, and no
 * attempt starts for `cooldownMs`; then one trial attempt runs (half-open): a success closes it, a
 * failure opens it again. Results of attempts started before it opened change nothing.
 */
export function createBreaker(
  { failures, cooldownMs }: { failures: number; cooldownMs: number },
  now: () => number = () => performance.now(),
): Breaker {
  let state: BreakerState = 'closed';
  let consecutive = 0;
  let openUntil = 0;
  let trialRunning = false;

  const current = (): BreakerState => {
    if (state === 'open' && now() >= openUntil) state = 'half-open';
    return state;
  };
  const open = () => {
    state = 'open';
    openUntil = now() + cooldownMs;
    return 'opened' as const;
  };

  return {
    state: current,
    failing: () => consecutive > 0 || current() !== 'closed',
    allowed(free) {
      const s = current();
      if (s === 'closed') return free;
      return s === 'half-open' && !trialRunning ? Math.min(1, free) : 0;
    },
    start() {
      const trial = current() === 'half-open';
      if (trial) trialRunning = true;
      return (ok) => {
        if (trial) {
          trialRunning = false;
          if (ok === undefined) return undefined;
          if (!ok) return open();
          state = 'closed';
          consecutive = 0;
          return 'closed';
        }
        if (state !== 'closed' || ok === undefined) return undefined;
        if (ok) {
          consecutive = 0;
          return undefined;
        }
        consecutive += 1;
        return consecutive >= failures ? open() : undefined;
      };
    },
  };
}
