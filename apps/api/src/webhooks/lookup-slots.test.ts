import { setImmediate as setImmediatePromise } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { createLookupSlots, LookupsBusyError } from './lookup-slots.ts';

describe('lookup slots', () => {
  it('refuses past the owner’s cap (token) and past the total (instance), and frees each slot once', () => {
    const slots = createLookupSlots({ total: 3, perOwner: 2 });
    const a1 = slots.take('a');
    slots.take('a');
    expect(() => slots.take('a')).toThrow(new LookupsBusyError('token'));
    slots.take('b');
    expect(() => slots.take('c')).toThrowError(expect.objectContaining({ scope: 'instance' }));
    a1();
    a1();
    expect(slots.inFlight()).toBe(2);
    slots.take('c');
    expect(slots.inFlight()).toBe(3);
  });

  it('serves waiters in order, skipping those whose owner is at its cap', async () => {
    const slots = createLookupSlots({ total: 2, perOwner: 1 });
    const held = slots.take('hostile');
    const other = slots.take('other');
    const order: string[] = [];
    const waitFor = async (owner: string, name: string) => {
      const release = await slots.wait(owner);
      order.push(name);
      return release;
    };
    const waits = [
      waitFor('hostile', 'hostile 1'),
      waitFor('hostile', 'hostile 2'),
      waitFor('tenant', 'tenant'),
    ];
    // A slot frees, but not the hostile token's: the tenant behind its queue gets it.
    other();
    await setImmediatePromise();
    expect(order).toStrictEqual(['tenant']);
    held();
    await setImmediatePromise();
    expect(order).toStrictEqual(['tenant', 'hostile 1']);
    (await waits[0]!)();
    await setImmediatePromise();
    expect(order).toStrictEqual(['tenant', 'hostile 1', 'hostile 2']);
    expect(slots.inFlight()).toBe(2);
  });
});
