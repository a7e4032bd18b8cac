import { randomFillSync } from 'node:crypto';
import type { IdGenerator } from '@opentelemetry/sdk-trace';

/** Random bytes drawn at a time: the ids of 64 root spans. */
const POOL_BYTES = 1536;

const ZERO = '0'.charCodeAt(0);
const INVALID = { 16: '0'.repeat(16), 32: '0'.repeat(32) } as const;

/**
 * Trace and span ids cut from a pool of random hex digits, refilled from the system's CSPRNG.
 * The SDK's own generator hex-encodes every id through a Buffer, a call into C++ per id: two for
 * each request, traced or not (a third of what configured-but-unsampled tracing cost a GET, by
 * callgrind; docs/tracing.md). Here one call encodes the ids of 64 requests. An all-zero id is
 * invalid (W3C Trace Context) and is drawn again. `fill` is for tests.
 */
export function pooledIdGenerator(fill: (pool: Buffer) => Buffer = randomFillSync): IdGenerator {
  let pool = '';
  let offset = 0;
  const next = (digits: 16 | 32): string => {
    for (;;) {
      if (offset + digits > pool.length) {
        pool = fill(Buffer.allocUnsafe(POOL_BYTES)).toString('hex');
        offset = 0;
      }
      const id = pool.slice(offset, offset + digits);
      offset += digits;
      // The first digit alone rules out 15 in 16 ids before comparing the whole.
      if (id.charCodeAt(0) !== ZERO || id !== INVALID[digits]) return id;
    }
  };
  return { generateTraceId: () => next(32), generateSpanId: () => next(16) };
}
