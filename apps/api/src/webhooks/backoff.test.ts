import { describe, expect, it } from 'vitest';
import { retryDelay } from './backoff.ts';

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
