import { describe, expect, it } from 'vitest';
import { closingIsolates } from './user-text.tsx';

describe('closingIsolates', () => {
  it('closes each isolate (LRI, RLI, FSI) the text leaves open, and nothing else', () => {
    expect(closingIsolates('Fern')).toBe('');
    expect(closingIsolates('\u202eeerf ylmiaf')).toBe('');
    expect(closingIsolates('\u2067שורש')).toBe('\u2069');
    expect(closingIsolates('\u2066a\u2067b\u2068c\u2069')).toBe('\u2069\u2069');
    // A PDI with no isolate open closes nothing.
    expect(closingIsolates('\u2069\u2069\u2067x')).toBe('\u2069');
  });
});
