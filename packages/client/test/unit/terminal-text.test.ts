import { describe, expect, it } from 'vitest';
import { visible } from '../../src/terminal-text.ts';

describe('visible', () => {
  it('escapes C0, DEL, C1 and the bidi embeddings, overrides and isolates', () => {
    const controls = [0x00, 0x07, 0x08, 0x0a, 0x0d, 0x1b, 0x1f, 0x7f, 0x80, 0x9b, 0x9f];
    const bidi = [0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069];
    for (const code of [...controls, ...bidi]) {
      expect(visible(`a${String.fromCharCode(code)}b`)).toBe(`a\\u${code.toString(16).padStart(4, '0')}b`);
    }
  });

  it('leaves text, the bidi marks of right-to-left names, emoji and escapes already shown as they are', () => {
    const text = 'Ficus \u200fפיקוס\u200e \u061cتين 🌿 zwj👩\u200d🌾 \\u001b tab-less';
    expect(visible(text)).toBe(text);
  });

  it('keeps JSON valid and exact: the escape is JSON’s own', () => {
    const value = { name: 'a\u009b[2J\u202e\x7f', tag: '\u2066x' };
    const json = visible(JSON.stringify(value));
    expect(json).toBe('{"name":"a\\u009b[2J\\u202e\\u007f","tag":"\\u2066x"}');
    expect(JSON.parse(json)).toStrictEqual(value);
  });
});
