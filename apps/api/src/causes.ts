/**
 * The messages down an error's `cause` chain, at most five, for one log or stderr line:
 * "The store is unavailable.: PostgreSQL is unavailable: connect ECONNREFUSED 127.0.0.1:5432".
 * Anything thrown that is not an Error is shown as `String(error)`.
 */
export function describeCauses(error: unknown): string {
  const messages: string[] = [];
  for (let e: unknown = error; e instanceof Error && messages.length < 5; e = e.cause) {
    // A refused connection to a dual-stack host is an AggregateError with an empty message.
    messages.push(e.message || String((e as { code?: unknown }).code ?? e.name));
  }
  return messages.join(': ') || String(error);
}
