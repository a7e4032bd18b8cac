import { describe, expect, it } from 'vitest';
import { describeCauses } from './causes.ts';

describe('describeCauses', () => {
  it('joins the messages down the cause chain', () => {
    const error = new Error('The store is unavailable.', {
      cause: new Error('PostgreSQL is unavailable', { cause: new Error('connect ECONNREFUSED') }),
    });
    expect(describeCauses(error)).toBe(
      'The store is unavailable.: PostgreSQL is unavailable: connect ECONNREFUSED',
    );
  });

  it('names an error without a message by its code, else its name', () => {
    const refused = Object.assign(new AggregateError([], ''), { code: 'ECONNREFUSED' });
    expect(describeCauses(new Error('could not connect', { cause: refused }))).toBe(
      'could not connect: ECONNREFUSED',
    );
    expect(describeCauses(new TypeError(''))).toBe('TypeError');
  });

  it('stops after five errors, so a cycle ends', () => {
    const error = new Error('again');
    error.cause = error;
    expect(describeCauses(error)).toBe('again: again: again: again: again');
  });

  it('shows anything else thrown as a string', () => {
    expect(describeCauses('boom')).toBe('boom');
    expect(describeCauses(undefined)).toBe('undefined');
  });
});
