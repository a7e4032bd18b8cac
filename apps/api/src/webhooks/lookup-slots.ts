/**
 * The concurrency caps on endpoints' host lookups: at most `total` in flight on this instance and
 * `perOwner` for one token's endpoints, so one token's slow name server holds a few slots and no more.
 */
export type LookupSlots = {
  /** A slot for `owner` at once, or `LookupsBusyError` (registration: the client retries). */
  take(owner: string): Release;
  /**
   * A slot for `owner` once one is free (deliveries): waiters are served in arrival order, skipping
   * those whose owner is at its cap, so a token's queue never holds up another token's lookups.
   */
  wait(owner: string): Promise<Release>;
  /** Lookups holding a slot now. */
  inFlight(): number;
};

/** Gives a slot back; calling it again does nothing. */
export type Release = () => void;

/** No slot was free: `scope` says whose cap was reached. */
export class LookupsBusyError extends Error {
  override name = 'LookupsBusyError';
  constructor(readonly scope: 'token' | 'instance') {
    super(
      scope === 'token'
        ? 'too many host lookups in flight for this token'
        : 'too many host lookups in flight on this instance',
    );
  }
}

export function createLookupSlots({ total, perOwner }: { total: number; perOwner: number }): LookupSlots {
  let used = 0;
  const byOwner = new Map<string, number>();
  const waiters: { owner: string; grant: (release: Release) => void }[] = [];

  const room = (owner: string): 'token' | 'instance' | undefined => {
    if ((byOwner.get(owner) ?? 0) >= perOwner) return 'token';
    return used >= total ? 'instance' : undefined;
  };

  function hold(owner: string): Release {
    used += 1;
    byOwner.set(owner, (byOwner.get(owner) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      used -= 1;
      const left = byOwner.get(owner)! - 1;
      if (left === 0) byOwner.delete(owner);
      else byOwner.set(owner, left);
      serve();
    };
  }

  function serve(): void {
    for (let i = 0; i < waiters.length && used < total; ) {
      const waiter = waiters[i]!;
      if (room(waiter.owner) === undefined) {
        waiters.splice(i, 1);
        waiter.grant(hold(waiter.owner));
      } else i += 1;
    }
  }

  return {
    take(owner) {
      const full = room(owner);
      if (full) throw new LookupsBusyError(full);
      return hold(owner);
    },
    wait(owner) {
      if (room(owner) === undefined) return Promise.resolve(hold(owner));
      return new Promise((grant) => waiters.push({ owner, grant }));
    },
    inFlight: () => used,
  };
}
