import { z } from 'zod';
import { ALL_SCOPES, type Scope } from '../auth/scopes.ts';

/**
 * The identity providers whose JWT access tokens the api accepts (docs/identity.md): OIDC_ISSUERS,
 * or OIDC_ISSUER with OIDC_AUDIENCE (and OIDC_CLIENT_ID) for the one-issuer case.
 */

/** The provider's scope names that map to ours when an issuer names no `scopeMap` (docs/identity.md). */
export const DEFAULT_SCOPE_MAP: Readonly<Record<string, readonly Scope[]>> = {
  'plants:read': ['read'],
  'plants:write': ['write'],
  'plants:webhooks': ['webhooks'],
  'plants:metrics': ['metrics'],
};

/** An issuer: https, or http on a loopback host (a provider under test); no query or fragment (OIDC Discovery §4). */
function isIssuerUrl(text: string): boolean {
  if (!URL.canParse(text)) return false;
  const url = new URL(text);
  const loopback = ['127.0.0.1', '[::1]', 'localhost'].includes(url.hostname);
  return (
    (url.protocol === 'https:' || (url.protocol === 'http:' && loopback)) &&
    url.search === '' &&
    url.hash === '' &&
    !text.includes('#') &&
    url.username === '' &&
    url.password === ''
  );
}

export const IssuerSchema = z
  .object({
    issuer: z.string().refine(isIssuerUrl, {
      message: 'must be an https:// URL (http:// only on a loopback host) with no query or fragment',
    }),
    audience: z.string().min(1),
    scopeMap: z.record(z.string().min(1), z.array(z.enum(ALL_SCOPES))).optional(),
    /** The public client the console and `plants login` sign in with. */
    clientId: z.string().min(1).optional(),
    /** Refuse tokens whose header `typ` is not `at+jwt` (RFC 9068), for providers that set it. */
    requireAtJwt: z.boolean().default(false),
  })
  .strict();

export type IssuerConfig = z.infer<typeof IssuerSchema>;

/** OIDC_ISSUERS: a JSON array of issuers, each named once. */
export const IssuersSchema = z
  .string()
  .optional()
  .transform((text, ctx) => {
    if (text === undefined || text.trim() === '') return undefined;
    try {
      return JSON.parse(text) as unknown;
    } catch {
      ctx.addIssue({ code: 'custom', message: 'must be a JSON array of {issuer, audience, …}' });
      return z.NEVER;
    }
  })
  .pipe(
    z
      .array(IssuerSchema)
      .min(1)
      .refine((list) => new Set(list.map((entry) => entry.issuer)).size === list.length, {
        message: 'must name each issuer once',
      })
      .optional(),
  );

/** Everything about identity providers the api needs. */
export type IdentityConfig = {
  issuers: IssuerConfig[];
  /** How long after a JWKS fetch an unknown `kid` waits before it may fetch again. */
  jwksCooldownMs: number;
};

/** The issuers from the parsed variables; a message (the caller's ConfigError) when they disagree. */
export function identityConfig(e: {
  OIDC_ISSUERS?: IssuerConfig[] | undefined;
  OIDC_ISSUER?: string | undefined;
  OIDC_AUDIENCE?: string | undefined;
  OIDC_CLIENT_ID?: string | undefined;
  OIDC_JWKS_COOLDOWN_MS: number;
}): IdentityConfig | string {
  const single =
    e.OIDC_ISSUER !== undefined || e.OIDC_AUDIENCE !== undefined || e.OIDC_CLIENT_ID !== undefined;
  if (e.OIDC_ISSUERS !== undefined && single) {
    return 'set either OIDC_ISSUERS or OIDC_ISSUER (with OIDC_AUDIENCE), not both';
  }
  if (!single) return { issuers: e.OIDC_ISSUERS ?? [], jwksCooldownMs: e.OIDC_JWKS_COOLDOWN_MS };
  const parsed = IssuerSchema.safeParse({
    issuer: e.OIDC_ISSUER,
    audience: e.OIDC_AUDIENCE,
    ...(e.OIDC_CLIENT_ID !== undefined && { clientId: e.OIDC_CLIENT_ID }),
  });
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const variable = issue.path[0] === 'audience' ? 'OIDC_AUDIENCE' : 'OIDC_ISSUER';
    return `${variable} ${issue.message === 'Invalid input: expected string, received undefined' ? 'is required with OIDC_ISSUER' : issue.message}`;
  }
  return { issuers: [parsed.data], jwksCooldownMs: e.OIDC_JWKS_COOLDOWN_MS };
}
