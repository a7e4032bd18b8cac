/**
 * Text a user typed (a name, a tag, a filter) or the api wrote, inside a sentence of the console:
 * in a <bdi>, its direction is its own, and a right-to-left name or a bidi control in it (U+202E
 * RIGHT-TO-LEFT OVERRIDE) cannot reorder the sentence around it. An isolate it opens and never
 * closes (U+2066 to U+2068) is closed at its end: Chromium pairs the end of the <bdi> with that
 * isolate instead, and the rest of the sentence would be laid out inside it.
 */
export function UserText({ children }: { children: string }) {
  return <bdi>{children + closingIsolates(children)}</bdi>;
}

/** U+2069 POP DIRECTIONAL ISOLATE for each isolate `text` leaves open (UAX #9, BD9). */
export function closingIsolates(text: string): string {
  let open = 0;
  for (const char of text) {
    if (char >= '\u2066' && char <= '\u2068') open += 1;
    else if (char === '\u2069' && open > 0) open -= 1;
  }
  return '\u2069'.repeat(open);
}
