/**
 * How long to wait after failed attempt `attempt` (1-based): "full jitter", a random time in
 * [0, min(maxMs, baseMs · 2^(attempt−1))]. Spreading retries over the whole window keeps the
 * deliveries that failed together (a receiver outage) from retrying together.
 */
export function retryDelay(
  attempt: number,
  { baseMs, maxMs }: { baseMs: number; maxMs: number },
  random: () => number = Math.random,
): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** Math.min(attempt - 1, 52));
  return Math.floor(random() * (ceiling + 1));
}
