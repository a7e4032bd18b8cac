import { type TRPCError, tracked } from '@trpc/server';
import { sseStreamProducer } from '@trpc/server/unstable-core-do-not-import';
import { describe, expect, it } from 'vitest';
import { RequestError } from '../errors.ts';
import { OVERFLOW_MESSAGE } from '../events/event-stream.ts';
import { toPlantEvent } from '../operations/events.ts';
import type { StoredEvent } from '../store/contract.ts';
import { toTrpcError, transformer, trpcErrorShape } from './procedures.ts';
import { subscriptionFormat } from './subscription.ts';

/** An HTTP chunk's content. */
const content = (bytes: Buffer) => bytes.subarray(bytes.indexOf('\r\n') + 2, bytes.length - 2).toString();

describe("a subscription's format", () => {
  // What trpc-direct-path.test.ts cannot wait for through the api: a ping after the interval
  // without an event, and the end of a stream too slow for its events. Compared with tRPC's own
  // writer; when this fails, tRPC's wire format changed under trpc/subscription.ts.
  it('writes what tRPC writes: connected, a tracked event, a ping when idle, and the error that ends a stream', async () => {
    const event: StoredEvent = {
      id: 9_007_199_254_740_993n,
      type: 'plant.created',
      plant: { id: 9_007_199_254_740_993n, name: 'Fern', tag: 'green', version: 1n },
      createdAt: new Date('2026-11-29T08:00:00.000Z'),
    };
    const overflow = toTrpcError(new RequestError('busy', OVERFLOW_MESSAGE));
    async function* events() {
      yield tracked(String(event.id), toPlantEvent(event));
      await new Promise((resolve) => setTimeout(resolve, 50));
      throw overflow;
    }
    const stream = sseStreamProducer({
      data: events(),
      serialize: (value) => transformer.serialize(value),
      formatError: ({ error }) => trpcErrorShape(error as TRPCError, 'plants.events'),
      ping: { enabled: true, intervalMs: 20 },
    });
    let text = '';
    for await (const bytes of stream as unknown as AsyncIterable<Uint8Array>)
      text += Buffer.from(bytes).toString();

    const format = subscriptionFormat('plants.events');
    const ping = content(format.heartbeat);
    // One ping or more, as timers fall on a loaded machine.
    expect(text.replaceAll(ping + ping, ping).replaceAll(ping + ping, ping)).toBe(
      [format.opening, format.frames([event]), format.heartbeat, format.ending('overflow') as Buffer]
        .map(content)
        .join(''),
    );
  });
});
