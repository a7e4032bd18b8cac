import { describe, expect, it } from 'vitest';
import { retryDelay, scheduleSpanMs } from './backoff.ts';

const schedule = { baseMs: 1_000, maxMs: 3_600_000 };

describe('retryDelay', () => {
  it('doubles the window after each attempt, from the base up to the cap', () => {
    const longest = (attempt: number) => retryDelay(attempt, schedule, () => 0.999_999_999);
    expect([1, 2, 3, 4, 12, 13, 14, 100].map(longest)).toStrictEqual([
      1_000, 2_000, 4_000, 8_000, 2_048_000, 3_600_000, 3_600_000, 3_600_000,
    ]);
  });

  it('draws uniformly over the whole window, down to no wait at all', () => {
    expect(retryDelay(3, schedule, () => 0)).toBe(0);
    expect(retryDelay(3, schedule, () => 0.5)).toBe(2_000);
    for (let i = 0; i < 100; i++) {
      const delay = retryDelay(5, schedule);
      expect(Number.isInteger(delay) && delay >= 0 && delay <= 16_000).toBe(true);
    }
  });
});

describe('scheduleSpanMs', () => {
  it("adds every wait's ceiling between the attempts and every attempt's timeout", () => {
    const defaults = { backoffBaseMs: 1_000, backoffMaxMs: 3_600_000, maxAttempts: 15, timeoutMs: 10_000 };
    // 1 + 2 + … + 2,048 s, then two waits of an hour; 15 attempts of 10 s.
    expect(scheduleSpanMs(defaults)).toBe(4_095_000 + 7_200_000 + 150_000);
    expect(scheduleSpanMs({ ...defaults, maxAttempts: 1 })).toBe(10_000);
    expect(scheduleSpanMs({ backoffBaseMs: 50, backoffMaxMs: 200, maxAttempts: 3, timeoutMs: 1_000 })).toBe(
      3_150,
    );
  });
});
