/**
 * The name a JWT principal goes by wherever a token's name is used (endpoint owners, stream and
 * Idempotency-Key scopes, logs, rate limits): its issuer and subject joined by `#`. An issuer has no
 * fragment and an issued token's name no `#`, so the name is unambiguous and never a token's.
 */
export function jwtPrincipalName(issuer: string, subject: string): string {
  return `${issuer}#${subject}`;
}

/** The issuer and subject of a JWT principal's name; `undefined` for a token's name. */
export function parseJwtPrincipalName(name: string): { issuer: string; subject: string } | undefined {
  const at = name.indexOf('#');
  if (at <= 0) return undefined;
  return { issuer: name.slice(0, at), subject: name.slice(at + 1) };
}
