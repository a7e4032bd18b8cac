/**
 * What a token may do: `read` lists and reads plants; `write` creates and deletes them; `webhooks`
 * registers and manages the token's own webhook endpoints; `metrics` scrapes `/metrics`, which names
 * every token and route (so `read` alone does not).
 */
export type Scope = 'read' | 'write' | 'webhooks' | 'metrics';

/** Every scope: what API_TOKENS and the generated token carry. */
export const ALL_SCOPES: readonly Scope[] = ['read', 'write', 'webhooks', 'metrics'];

/** Whether `text` names a scope. */
export function isScope(text: string): text is Scope {
  return (ALL_SCOPES as readonly string[]).includes(text);
}

/** Scopes as the store keeps them: a comma-separated list (unknown names are dropped). */
export function parseScopes(text: string): Scope[] {
  return text.split(',').filter(isScope);
}
