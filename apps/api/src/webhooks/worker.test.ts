import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { wakeableNaps } from './naps.ts';

describe('wakeableNaps', () => {
  it('ends a nap when woken, leaving no listener on the signal however often it is woken', async () => {
    const stopping = new AbortController();
    const naps = wakeableNaps(stopping.signal);
    const started = performance.now();
    for (let i = 0; i < 50; i++) {
      const nap = naps.nap(60_000);
      naps.wake();
      await nap;
    }
    expect(performance.now() - started).toBeLessThan(10_000);
    expect(getEventListeners(stopping.signal, 'abort')).toHaveLength(0);
  });

  it('ends a nap at its time, or at once when the signal aborts, and does not start one after', async () => {
    const stopping = new AbortController();
    const naps = wakeableNaps(stopping.signal);
    let ended = false;
    await naps.nap(5).then(() => {
      ended = true;
    });
    expect(ended).toBe(true);
    const long = naps.nap(60_000);
    expect(getEventListeners(stopping.signal, 'abort')).toHaveLength(1);
    stopping.abort();
    await long;
    expect(getEventListeners(stopping.signal, 'abort')).toHaveLength(0);
    await naps.nap(60_000);
    naps.wake();
  });
});
