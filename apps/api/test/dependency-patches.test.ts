import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { initTRPC } from '@trpc/server';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

/**
 * patches/@trpc__server@11.25.2.patch (pnpm `patchedDependencies`): tRPC's object-spread helper
 * copies through Object.assign instead of property descriptors, a tenth of the CPU of a one-call
 * tRPC mutation in the bench's profile. These tests check that what is installed is the patched
 * helper and that tRPC's context and input merging still behave as the original's.
 */
describe('the @trpc/server patch', () => {
  it('is what pnpm installed', () => {
    const require = createRequire(import.meta.url);
    const dist = dirname(require.resolve('@trpc/server'));
    for (const file of ['getErrorShape-B5jPKHJ3.mjs', 'getErrorShape-BAuHhNuh.cjs']) {
      const code = readFileSync(join(dist, file), 'utf8');
      expect(code).toContain('Plant Store patch');
      expect(code).toMatch(/else Object\.assign\(e, t\);/);
    }
  });

  it('merges contexts and inputs as before, an own "__proto__" key included', async () => {
    const t = initTRPC.context<{ base: string }>().create();
    const hostile = JSON.parse('{"__proto__": {"polluted": true}, "extra": 2}') as object;
    const procedure = t.procedure
      .use(({ next }) => next({ ctx: { added: 1 } }))
      .use(({ next }) => next({ ctx: hostile }))
      .input(z.object({ a: z.number() }))
      .input(z.object({ b: z.number() }))
      .query(({ ctx, input }) => ({ ctx, input }));
    const caller = t.createCallerFactory(t.router({ procedure }))({ base: 'x' });
    const { ctx, input } = await caller.procedure({ a: 1, b: 2 });

    expect(ctx).toMatchObject({ base: 'x', added: 1, extra: 2 });
    // Defined as an own property, as the original helper does: the prototype is untouched.
    expect(Object.getPrototypeOf(ctx)).toBe(Object.prototype);
    expect(Object.hasOwn(ctx, '__proto__')).toBe(true);
    expect((ctx as { polluted?: boolean }).polluted).toBeUndefined();
    expect(input).toEqual({ a: 1, b: 2 });
  });
});
