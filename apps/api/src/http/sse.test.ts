import { setImmediate as nextTurn } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { writeInSlices } from './sse.ts';

describe('writeInSlices', () => {
  it('writes 500 streams a turn of the event loop, so that other work runs between the slices', async () => {
    const order: (number | string)[] = [];
    const flushes = Array.from({ length: 1_200 }, (_, i) => () => {
      order.push(i);
      // Work that arrives while the first slice is written (a create's commit, a read of the log).
      if (i === 0) setImmediate(() => order.push('other'));
    });
    writeInSlices(flushes, 0);
    expect(order).toHaveLength(500);
    for (let turn = 0; turn < 5; turn++) await nextTurn();
    expect(order).toStrictEqual([
      ...Array.from({ length: 500 }, (_, i) => i),
      'other',
      ...Array.from({ length: 700 }, (_, i) => 500 + i),
    ]);
  });
});
