import { describe, expect, it } from 'vitest';
import { createBreaker } from './breaker.ts';

function clocked() {
  let now = 0;
  const breaker = createBreaker({ failures: 3, cooldownMs: 1_000 }, () => now);
  return { breaker, advance: (ms: number) => (now += ms) };
}

describe('createBreaker', () => {
  it('lets every free slot through while fewer than `failures` attempts in a row failed', () => {
    const { breaker } = clocked();
    expect(breaker.allowed(8)).toBe(8);
    expect([false, false, true, false, false].map((ok) => breaker.start()(ok))).toStrictEqual([
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
    expect(breaker.state()).toBe('closed');
    expect(breaker.allowed(8)).toBe(8);
  });

  it('opens after `failures` consecutive failures: nothing starts until the cooldown has passed', () => {
    const { breaker, advance } = clocked();
    expect([false, false, false].map((ok) => breaker.start()(ok))).toStrictEqual([
      undefined,
      undefined,
      'opened',
    ]);
    expect(breaker.state()).toBe('open');
    expect(breaker.allowed(8)).toBe(0);
    advance(999);
    expect(breaker.allowed(8)).toBe(0);
    advance(1);
    expect(breaker.state()).toBe('half-open');
    expect(breaker.allowed(8)).toBe(1);
    expect(breaker.allowed(0)).toBe(0);
  });

  it('half-open: runs one trial at a time; its success closes the breaker', () => {
    const { breaker, advance } = clocked();
    for (let i = 0; i < 3; i++) breaker.start()(false);
    advance(1_000);
    const trial = breaker.start();
    expect(breaker.allowed(8)).toBe(0);
    expect(trial(true)).toBe('closed');
    expect(breaker.state()).toBe('closed');
    expect(breaker.allowed(8)).toBe(8);
    // The count starts over.
    expect([false, false].map((ok) => breaker.start()(ok))).toStrictEqual([undefined, undefined]);
    expect(breaker.state()).toBe('closed');
  });

  it('half-open: a failed trial opens it again for another cooldown', () => {
    const { breaker, advance } = clocked();
    for (let i = 0; i < 3; i++) breaker.start()(false);
    advance(1_000);
    expect(breaker.start()(false)).toBe('opened');
    expect(breaker.allowed(8)).toBe(0);
    advance(1_000);
    expect(breaker.allowed(8)).toBe(1);
  });

  it('ignores results of attempts started before it opened, and attempts that said nothing', () => {
    const { breaker, advance } = clocked();
    const late = [breaker.start(), breaker.start()];
    for (let i = 0; i < 3; i++) breaker.start()(false);
    expect(late[0]!(true)).toBeUndefined();
    expect(breaker.state()).toBe('open');
    advance(1_000);
    const trial = breaker.start();
    expect(late[1]!(false)).toBeUndefined();
    expect(breaker.state()).toBe('half-open');
    // A trial abandoned at shutdown frees the trial slot without deciding anything.
    expect(trial(undefined)).toBeUndefined();
    expect(breaker.allowed(8)).toBe(1);
  });
});
