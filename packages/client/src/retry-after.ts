/**
 * A `Retry-After` header (delay-seconds, or an HTTP date) as milliseconds from `now`; `undefined`
 * when there is none or it cannot be read. Not bounded: a hostile or broken server may ask for
 * years, so each caller caps the wait it makes.
 */
export function retryAfterMs(header: string | null | undefined, now = Date.now()): number | undefined {
  const value = header?.trim();
  if (value === undefined || value === '') return undefined;
  if (/^[0-9]+$/.test(value)) return Number(value) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}
