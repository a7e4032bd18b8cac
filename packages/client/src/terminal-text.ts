/**
 * What a terminal would obey or reorder instead of showing: C0 controls (ESC starts CSI and OSC
 * sequences; BEL, backspace, carriage return…), DEL, C1 controls (U+009B is a CSI on its own in
 * some terminals), and the bidirectional controls (U+202E shows the rest of a line reversed).
 */
const UNSAFE = /[\p{Cc}\p{Bidi_Control}]/gu;

/**
 * `text` with every such character written as a `\uXXXX` escape, so it shows as what it is. The
 * escape is JSON's own: JSON text stays valid and parses to the same value (JSON.stringify escapes
 * the C0 controls already, not DEL, C1 or bidi controls).
 */
export function visible(text: string): string {
  return text.replace(UNSAFE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
