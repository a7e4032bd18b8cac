type Schedule = { baseMs: number; maxMs: number };

/** The longest wait after failed attempt `attempt` (1-based): `baseMs · 2^(attempt−1)`, at most `maxMs`. */
const ceilingMs = (attempt: number, { baseMs, maxMs }: Schedule) =>
  Math.min(maxMs, baseMs * 2 ** Math.min(attempt - 1, 52));

/**
 * How long to wait after failed attempt `attempt` (1-based): "full jitter", a random time in
 * [0, min(maxMs, baseMs · 2^(attempt−1))]. Spreading retries over the whole window keeps the
 * deliveries that failed together (a receiver outage) from retrying together.
 */
export function retryDelay(attempt: number, schedule: Schedule, random: () => number = Math.random): number {
  return Math.floor(random() * (ceilingMs(attempt, schedule) + 1));
}

/**
 * The longest a delivery's schedule runs: each of its `maxAttempts` attempts to the timeout, and each
 * wait between them at its ceiling (3 h 10 min 45 s by default). A delivery held back that long by
 * its subscriber's open breaker, which spends no attempts, is failed (retention.ts): a receiver dead
 * for days must not grow the table without end.
 */
export function scheduleSpanMs(options: {
  backoffBaseMs: number;
  backoffMaxMs: number;
  maxAttempts: number;
  timeoutMs: number;
}): number {
  const schedule = { baseMs: options.backoffBaseMs, maxMs: options.backoffMaxMs };
  let waits = 0;
  for (let attempt = 1; attempt < options.maxAttempts; attempt++) waits += ceilingMs(attempt, schedule);
  return waits + options.maxAttempts * options.timeoutMs;
}
