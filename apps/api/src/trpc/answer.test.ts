import superjson from 'superjson';
import { describe, expect, it } from 'vitest';
import { trpcResult } from './answer.ts';

const shared = { a: 1 };
class Point {
  x = 1;
}

describe('trpcResult', () => {
  it('encodes every value as superjson does', () => {
    const values: unknown[] = [
      { name: 'Fern', tag: 'bench' },
      { items: [{ id: 1n, name: 'Fern' }], next: null },
      [1, 'x', null, true, { nested: [[]] }],
      'text',
      0,
      null,
      undefined,
      { a: undefined },
      { a: -0 },
      { a: Number.NaN },
      { a: Number.POSITIVE_INFINITY },
      { when: new Date(0) },
      { x: shared, y: shared },
      [shared, shared],
      // biome-ignore lint/suspicious/noSparseArray: a hole is what is tested
      [1, , 2],
      new Point(),
      Object.assign(Object.create(null), { a: 1 }),
      { [Symbol('s')]: 1 },
      new Map([[1, 2]]),
    ];
    for (const value of values) {
      expect(trpcResult(value)).toStrictEqual({
        item: { result: { data: superjson.serialize(value) } },
        error: null,
      });
    }
  });

  it('refuses the keys superjson refuses', () => {
    for (const key of ['__proto__', 'constructor', 'prototype']) {
      const value = JSON.parse(`{"${key}": 1}`);
      expect(() => superjson.serialize(value)).toThrow(/prototype pollution/);
      expect(() => trpcResult(value)).toThrow(/prototype pollution/);
    }
  });

  it('hands a plain JSON value on as it is, without superjson copying it', () => {
    const plant = { name: 'Fern', tag: 'bench' };
    const { item } = trpcResult(plant) as { item: { result: { data: { json: unknown } } } };
    expect(item.result.data).toStrictEqual({ json: plant });
    expect(item.result.data.json).toBe(plant);
  });
});
