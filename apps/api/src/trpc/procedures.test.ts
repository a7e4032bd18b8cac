import { TRPCError } from '@trpc/server';
import { describe, expect, it } from 'vitest';
import { trpcErrorShape } from './procedures.ts';

describe('trpcErrorShape', () => {
  it("never passes on an exception's own text that tRPC copied into its error", () => {
    const cause = new TypeError("Cannot destructure property 'json' of 't' as it is null.");
    const copied = new TRPCError({ code: 'BAD_REQUEST', message: cause.message, cause });
    expect(trpcErrorShape(copied, 'plants.list')).toStrictEqual({
      message: 'The request is not a valid tRPC request.',
      code: -32600,
      data: { code: 'BAD_REQUEST', httpStatus: 400, path: 'plants.list' },
    });
  });

  it("keeps tRPC's own messages", () => {
    const own = new TRPCError({ code: 'NOT_FOUND', message: 'No procedure found on path "nope"' });
    expect(trpcErrorShape(own, 'nope').message).toBe('No procedure found on path "nope"');
    const wrapped = new TRPCError({ code: 'BAD_REQUEST', message: 'Invalid URL', cause: new TypeError('x') });
    expect(trpcErrorShape(wrapped, undefined).message).toBe('Invalid URL');
  });
});
