/**
 * What a terminal would obey or reorder instead of showing: C0 controls (ESC starts CSI and OSC
 * sequences; BEL, backspace, carriage return…), DEL, C1 controls (U+009B is a CSI on its own in
 * some terminals), and the bidirectional embeddings, overrides and isolates (U+202E shows the
 * rest of a line reversed). The bidi marks (LRM, RLM, ALM) are left alone: right-to-left names
 * use them, and they reorder no more than a letter of that direction would.
 */
const UNSAFE = /[\p{Cc}\u202A-\u202E\u2066-\u2069]/gu;

/**
 * `text` with every such character written as a `\uXXXX` escape, so it shows as what it is. The
 * escape is JSON's own: JSON text stays valid and parses to the same value (JSON.stringify escapes
 * the C0 controls already, not DEL, C1 or bidi controls).
 */
export function visible(text: string): string {
  return text.replace(UNSAFE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
