import { randomFillSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { pooledIdGenerator } from './ids.ts';

describe('pooledIdGenerator', () => {
  it('gives lowercase hex ids of 32 and 16 digits, each different, across many refills of its pool', () => {
    const ids = pooledIdGenerator();
    const traces = new Set<string>();
    const spans = new Set<string>();
    // 1,000 of each: the pool (1,536 bytes) is refilled about 32 times.
    for (let i = 0; i < 1000; i++) {
      const traceId = ids.generateTraceId();
      const spanId = ids.generateSpanId();
      expect(traceId).toMatch(/^[0-9a-f]{32}$/);
      expect(spanId).toMatch(/^[0-9a-f]{16}$/);
      traces.add(traceId);
      spans.add(spanId);
    }
    expect(traces.size).toBe(1000);
    expect(spans.size).toBe(1000);
    // Every digit turns up in every position of a trace id (a stuck digit would not).
    for (let position = 0; position < 32; position++) {
      expect(new Set([...traces].map((id) => id[position])).size).toBe(16);
    }
  });

  it('draws again instead of giving an all-zero id, which W3C Trace Context makes invalid', () => {
    // A pool of zeros first (as a broken source of randomness would give), then a random one.
    let fills = 0;
    const ids = pooledIdGenerator((pool) => (fills++ === 0 ? pool.fill(0) : randomFillSync(pool)));
    const traceId = ids.generateTraceId();
    expect(fills).toBe(2);
    expect(traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(traceId).not.toBe('0'.repeat(32));
    expect(ids.generateSpanId()).not.toBe('0'.repeat(16));
  });
});
